// Decides a graph task from its replicas: two volunteers that agree (under the outputs'
// tolerances) carry it; on disagreement a third opinion is asked for; when no two volunteers agree,
// the node's own CPU reference decides. A replica computed by the node is trusted: whoever
// disagrees with it loses. Pure; any thread.
#pragma once

#include <string>
#include <vector>

#include "goblin/core/tensor.hpp"
#include "goblin/verify/output_agreement.hpp"

namespace goblin::labnode {

struct Replica {
    std::int64_t attempt = 0;
    std::string volunteerId; // empty for the node's own computation
    std::string backend;
    double computeSeconds = 0;
    std::vector<core::Tensor> outputs;
    bool fromNode() const { return volunteerId.empty(); }
};

struct ReplicaVerdict {
    bool accepted = false;
    double ratio = 0; // worst |Δ|/bound against the decisive replica
    std::string reason;
};

enum class Decision { NeedAnotherVolunteer, NeedNodeReference, Decided };

struct Judgement {
    Decision decision = Decision::NeedAnotherVolunteer;
    std::size_t decisive = 0;             // index of the replica whose outputs are the result
    std::vector<ReplicaVerdict> verdicts; // per replica, when decided
};

inline constexpr std::size_t kVolunteerOpinions = 3; // two, and a third on disagreement

Judgement judgeReplicas(const std::vector<verify::OutputTolerance>& tolerances,
                        const std::vector<Replica>& replicas);

} // namespace goblin::labnode
