// The one record of a verdict on a volunteer's result, whatever the job kind: who, what, which
// method decided, the measured error against its threshold, and why. Plain values; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "goblin/net/message.hpp"

namespace goblin::labnode {

struct VerdictRecord {
    std::string kind; // the job kind's task op: "matmul", "graph"
    std::int64_t task = 0;
    std::int64_t attempt = 0;
    std::string volunteerId;
    std::string backend;
    bool accepted = false;
    // freivalds-f64 | freivalds-escalated | replica-agreement | node-sample | node-tiebreak |
    // shape-gate
    std::string method;
    double ratio = 0; // measured error ÷ its threshold (graphs: worst |Δ|/bound; 0: bit for bit)
                      // matmul: worst element error ÷ its own bound (Freivalds estimate; exact
                      // when escalated)
    double residual = 0; // matmul: the residual (|ΔC_ij| when escalated) and its sound bound
    double bound = 0;
    std::string reason;
    double verifySeconds = 0;
    double computeSeconds = 0;
    // Last, so positional initialisers of the fields above stay valid.
    double threshold = 0; // matmul: the ratio above which the method does not accept
};

enum class VerdictWord { Accepted, Rejected, Stale };

// The `verdict` frame a volunteer receives for (task, attempt).
net::Message verdictMessage(std::int64_t task, std::int64_t attempt, VerdictWord verdict);

} // namespace goblin::labnode
