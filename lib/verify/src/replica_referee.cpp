#include "goblin/verify/replica_referee.hpp"

namespace goblin::verify {
namespace {

Agreement compareReplicas(const std::vector<OutputTolerance>& tolerances, const Replica& first,
                          const Replica& second) {
    if (!isCanonicalBackend(first.backend) || !isCanonicalBackend(second.backend))
        return compareOutputs(tolerances, first.outputs, second.outputs);
    std::vector<OutputTolerance> bitwise = tolerances;
    for (OutputTolerance& tolerance : bitwise)
        tolerance.budget = 0;
    Agreement agreement = compareOutputs(bitwise, first.outputs, second.outputs);
    if (!agreement.agree)
        agreement.reason = "canonical backends differ: " + agreement.reason;
    return agreement;
}

Judgement decideAgainst(const std::vector<OutputTolerance>& tolerances,
                        const std::vector<Replica>& replicas, std::size_t decisive) {
    Judgement judgement;
    judgement.decision = Decision::Decided;
    judgement.decisive = decisive;
    for (std::size_t i = 0; i < replicas.size(); ++i) {
        if (i == decisive) {
            judgement.verdicts.push_back({true, 0, {}});
            continue;
        }
        const auto agreement = compareReplicas(tolerances, replicas[decisive], replicas[i]);
        judgement.verdicts.push_back({agreement.agree, agreement.worstRatio,
                                      agreement.agree ? std::string() : agreement.reason});
    }
    return judgement;
}

// The replica whose outputs become the result when all agree: a canonical one if any.
std::size_t preferred(const std::vector<Replica>& replicas) {
    for (std::size_t i = 0; i < replicas.size(); ++i)
        if (isCanonicalBackend(replicas[i].backend))
            return i;
    return 0;
}

} // namespace

bool isCanonicalBackend(std::string_view backend) {
    return backend == "cpu-reference" || backend == "opencl-graph" || backend == "node-reference";
}

Judgement judgeReplicas(const std::vector<OutputTolerance>& tolerances,
                        const std::vector<Replica>& replicas) {
    for (std::size_t i = 0; i < replicas.size(); ++i)
        if (replicas[i].fromNode())
            return decideAgainst(tolerances, replicas, i);
    Judgement judgement = decideAgainst(tolerances, replicas, preferred(replicas));
    for (const ReplicaVerdict& verdict : judgement.verdicts)
        if (!verdict.accepted)
            return Judgement{}; // someone is wrong: the node decides who
    return judgement;
}

} // namespace goblin::verify
