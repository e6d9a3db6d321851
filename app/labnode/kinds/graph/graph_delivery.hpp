// What a researcher receives for a finished graph job: job_done with the summary (counts from the
// recorded verdicts, verification time) and the merged outputs as tensors. Core thread (it reads
// the store).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "goblin/core/tensor.hpp"
#include "goblin/net/message.hpp"
#include "store/database.hpp"

namespace goblin::labnode {

struct FinishedGraph {
    const std::string& id;
    std::int64_t tasks = 0;
    double verifySeconds = 0;
    double seconds = 0; // since it was submitted
    const std::vector<core::Tensor>& outputs;
};

net::Message graphDoneMessage(Database& db, const FinishedGraph& job, std::int64_t requestId);
// The recorded verdicts of a job, for its log line: replicas accepted and rejected, tasks the node
// audited and the liars they caught.
std::string describeVerdicts(Database& db, const std::string& jobId);

} // namespace goblin::labnode
