// Per-researcher quotas (table researcher_quotas): the largest job a researcher may submit, in
// bytes uploaded and FLOPs, and how many of its jobs may run at once. Lab staff set them
// (`researchers quota`); the researcher desk reads them at check_quota and at every submit.
// Staff commands with their own connection, or the core thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "goblin/core/error.hpp"
#include "store/database.hpp"

namespace goblin::labnode {

// Defaults for a researcher lab staff gave no quota: far above any test or benchmark job (the
// out-of-core benchmark uploads 8 GiB and computes 7e13 FLOPs) and far below a product that would
// hold a node for days.
inline constexpr std::int64_t kDefaultMaxJobBytes = std::int64_t{64} << 30;
inline constexpr double kDefaultMaxJobFlops = 1e16;
inline constexpr std::int64_t kDefaultMaxRunningJobs = 16;

struct ResearcherQuota {
    std::int64_t maxBytes = kDefaultMaxJobBytes;
    double maxFlops = kDefaultMaxJobFlops;
    std::int64_t maxRunningJobs = kDefaultMaxRunningJobs;
};

// What `researchers quota` changes: absent fields keep their value.
struct QuotaChange {
    std::optional<std::int64_t> maxBytes;
    std::optional<double> maxFlops;
    std::optional<std::int64_t> maxRunningJobs;
};

ResearcherQuota quotaOf(Database& db, std::int64_t researcherId);
// NotFound naming the e-mail when no researcher has it.
[[nodiscard]] Expected<ResearcherQuota> quotaOfEmail(Database& db, const std::string& email);
[[nodiscard]] Expected<ResearcherQuota> setQuota(Database& db, const std::string& email,
                                                 const QuotaChange& change, double now);
// The researcher's matmul, graph and training jobs that run now (a training job's rounds, graph
// jobs the node submits for it, are not counted).
std::int64_t runningJobsOf(Database& db, std::int64_t researcherId);

} // namespace goblin::labnode
