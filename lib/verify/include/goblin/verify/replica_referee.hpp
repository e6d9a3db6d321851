// Decides a graph task from its replicas. Canonical backends (the CPU reference and the OpenCL
// graph executor, which share goblin_math.h and fixed orders, and the node's own reference) must
// agree bit for bit; the outputs' derived tolerances apply only when a replica comes from a
// backend that is not canonical. All volunteer replicas agreeing decides the task; any
// disagreement means someone is wrong, so the node's reference decides (a third volunteer could be
// the liar's own second identity). A replica the node computed is trusted: whoever disagrees with
// it loses. Pure; any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "goblin/core/tensor.hpp"
#include "goblin/verify/output_agreement.hpp"

namespace goblin::verify {

struct Replica {
    std::int64_t attempt = 0;
    std::string volunteerId; // empty for the node's own computation
    std::string backend;
    std::string address; // the volunteer's network address when it sent the result
    double computeSeconds = 0;
    std::vector<core::Tensor> outputs;
    bool fromNode() const { return volunteerId.empty(); }
};

struct ReplicaVerdict {
    bool accepted = false;
    double ratio = 0; // worst |Δ|/bound against the decisive replica (0: bit for bit)
    std::string reason;
};

enum class Decision { NeedNodeReference, Decided };

struct Judgement {
    Decision decision = Decision::NeedNodeReference;
    std::size_t decisive = 0;             // index of the replica whose outputs are the result
    std::vector<ReplicaVerdict> verdicts; // per replica, when decided
};

// "cpu-reference", "opencl-graph", "node-reference".
bool isCanonicalBackend(std::string_view backend);

Judgement judgeReplicas(const std::vector<OutputTolerance>& tolerances,
                        const std::vector<Replica>& replicas);

} // namespace goblin::verify
