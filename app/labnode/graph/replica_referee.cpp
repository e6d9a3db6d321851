#include "replica_referee.hpp"

namespace goblin::labnode {
namespace {

Judgement decideAgainst(const std::vector<verify::OutputTolerance>& tolerances,
                        const std::vector<Replica>& replicas, std::size_t decisive) {
    Judgement judgement;
    judgement.decision = Decision::Decided;
    judgement.decisive = decisive;
    for (std::size_t i = 0; i < replicas.size(); ++i) {
        if (i == decisive) {
            judgement.verdicts.push_back({true, 0, {}});
            continue;
        }
        const auto agreement =
            verify::compareOutputs(tolerances, replicas[decisive].outputs, replicas[i].outputs);
        judgement.verdicts.push_back({agreement.agree, agreement.worstRatio,
                                      agreement.agree ? std::string() : agreement.reason});
    }
    return judgement;
}

} // namespace

Judgement judgeReplicas(const std::vector<verify::OutputTolerance>& tolerances,
                        const std::vector<Replica>& replicas) {
    for (std::size_t i = 0; i < replicas.size(); ++i)
        if (replicas[i].fromNode())
            return decideAgainst(tolerances, replicas, i);
    for (std::size_t i = 0; i < replicas.size(); ++i)
        for (std::size_t j = i + 1; j < replicas.size(); ++j)
            if (verify::compareOutputs(tolerances, replicas[i].outputs, replicas[j].outputs).agree)
                return decideAgainst(tolerances, replicas, i);
    Judgement judgement;
    judgement.decision = replicas.size() < kVolunteerOpinions ? Decision::NeedAnotherVolunteer
                                                              : Decision::NeedNodeReference;
    return judgement;
}

} // namespace goblin::labnode
