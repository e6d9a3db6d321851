// The researcher's quota at the door: a job's size (bytes uploaded, FLOPs) and the researcher's
// running jobs against the limits lab staff set (store/researcher_quotas). Asked by the researcher
// desk at check_quota (before anything is uploaded) and again at every submit. Core thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "goblin/core/error.hpp"
#include "goblin/net/message.hpp"
#include "store/database.hpp"
#include "store/researcher_quotas.hpp"

namespace goblin::labnode {

struct JobSize {
    std::int64_t bytes = 0;      // what the job uploads
    std::optional<double> flops; // absent: not known before the job is planned
};

struct QuotaUse {
    ResearcherQuota quota;
    std::int64_t runningJobs = 0;
};

// The job's size as its submit message tells it: the bytes of its tensors, and for a matmul
// received whole, 2·m·k·n FLOPs.
JobSize sizeOfSubmit(const net::Message& message);

// LimitExceeded naming the limit (max_running_jobs, max_bytes or max_flops), its value and how
// lab staff change it; else the quota and the running jobs.
[[nodiscard]] Expected<QuotaUse> checkQuota(Database& db, std::int64_t researcherId,
                                            const JobSize& size);

} // namespace goblin::labnode
