#include "goblin/verify/replica_referee.hpp"

#include <algorithm>
#include <span>
#include <utility>

namespace goblin::verify {
namespace {

// Two replicas' common outputs: a replica without the witnesses (protocol 10's omit_witnesses)
// is compared on the outputs it has, the researcher's; the caller's gate saw to their count.
Agreement compareReplicas(std::span<const OutputTolerance> all, const Replica& first,
                          const Replica& second) {
    const std::size_t common = std::min({all.size(), first.outputs.size(), second.outputs.size()});
    const auto tolerances = all.first(common);
    const auto a = std::span<const core::Tensor>(first.outputs).first(common);
    const auto b = std::span<const core::Tensor>(second.outputs).first(common);
    if (!isCanonicalBackend(first.backend) || !isCanonicalBackend(second.backend))
        return compareOutputs(tolerances, a, b);
    std::vector<OutputTolerance> bitwise(tolerances.begin(), tolerances.end());
    for (OutputTolerance& tolerance : bitwise)
        tolerance.budget = 0;
    Agreement agreement = compareOutputs(bitwise, a, b);
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

// The replica whose outputs become the result when all agree: a canonical one if any, and of
// those one with the witnesses (the node's audit reads them) if any.
std::size_t preferred(const std::vector<Replica>& replicas) {
    std::size_t best = 0;
    const auto rank = [&](std::size_t i) {
        return std::pair(isCanonicalBackend(replicas[i].backend), replicas[i].outputs.size());
    };
    for (std::size_t i = 1; i < replicas.size(); ++i)
        if (rank(i) > rank(best))
            best = i;
    return best;
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
