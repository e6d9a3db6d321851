#include "node/quota_gate.hpp"

#include <cstdio>
#include <iterator>

#include "staff/human_format.hpp"

namespace goblin::labnode {
namespace {

constexpr const char* kWhoSetsIt =
    " (lab staff set it: goblin-labnode researchers quota EMAIL --max-bytes/--max-flops/"
    "--max-running-jobs)";

std::string bytesText(std::int64_t bytes) {
    const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024 && unit + 1 < std::size(units)) {
        value /= 1024;
        ++unit;
    }
    char text[64];
    if (unit == 0)
        std::snprintf(text, sizeof text, "%lld bytes", static_cast<long long>(bytes));
    else
        std::snprintf(text, sizeof text, "%.1f %s (%s bytes)", value, units[unit],
                      groupedNumber(bytes).c_str());
    return text;
}

std::string flopsText(double flops) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", flops);
    return text;
}

} // namespace

JobSize sizeOfSubmit(const net::Message& message) {
    JobSize size;
    for (const net::TensorPtr& tensor : message.tensors)
        size.bytes += static_cast<std::int64_t>(tensor->byteSize());
    const auto& tensors = message.tensors;
    if (message.type() == "submit_matmul" && tensors.size() == 2 &&
        tensors[0]->shape().size() == 2 && tensors[1]->shape().size() == 2)
        size.flops = 2.0 * static_cast<double>(tensors[0]->shape()[0]) *
                     static_cast<double>(tensors[0]->shape()[1]) *
                     static_cast<double>(tensors[1]->shape()[1]);
    return size;
}

Expected<QuotaUse> checkQuota(Database& db, std::int64_t researcherId, const JobSize& size) {
    QuotaUse use{quotaOf(db, researcherId), runningJobsOf(db, researcherId)};
    const ResearcherQuota& quota = use.quota;
    if (use.runningJobs >= quota.maxRunningJobs)
        return makeError(ErrorCode::LimitExceeded,
                         "you have " + groupedNumber(use.runningJobs) +
                             " running jobs, your quota max_running_jobs is " +
                             groupedNumber(quota.maxRunningJobs) + kWhoSetsIt +
                             ": wait for one to finish or cancel one");
    if (size.bytes > quota.maxBytes)
        return makeError(ErrorCode::LimitExceeded, "the job uploads " + bytesText(size.bytes) +
                                                       ", over your quota max_bytes of " +
                                                       bytesText(quota.maxBytes) + kWhoSetsIt);
    if (size.flops && *size.flops > quota.maxFlops)
        return makeError(ErrorCode::LimitExceeded, "the job computes about " +
                                                       flopsText(*size.flops) +
                                                       " FLOPs, over your quota max_flops of " +
                                                       flopsText(quota.maxFlops) + kWhoSetsIt);
    return use;
}

} // namespace goblin::labnode
