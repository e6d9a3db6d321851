// Durable leases of every job kind: (kind, task, attempt) → volunteer, lease time and deadline, so
// attempt numbers never repeat across restarts; and the leases lost without an answer (expired,
// dropped, given up), so a restarted node still never gives such a task back to its volunteer.
// Core thread only, like NodeStore.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "goblin/core/error.hpp"
#include "store/database.hpp"
#include "work/job_kind.hpp"

namespace goblin::labnode {

struct LeaseRecord {
    std::string kind; // "matmul", "graph"
    std::int64_t task = 0;
    std::int64_t attempt = 0;
    std::string volunteerId;
    double leasedAt = 0;
    double deadline = 0;
};

// Refuses an attempt already leased.
[[nodiscard]] Expected<void> recordLease(Database& db, const LeaseRecord& lease);

// A lease that ended without a result: which volunteer, why ("expired", "disconnected",
// "task_error") and when.
struct LeaseLossRecord {
    std::string kind;
    std::int64_t task = 0;
    std::int64_t attempt = 0;
    std::string volunteerId;
    LeaseLoss why = LeaseLoss::Expired;
    double at = 0;
};

std::string_view leaseLossName(LeaseLoss why);

[[nodiscard]] Expected<void> recordLeaseLoss(Database& db, const LeaseLossRecord& loss);
// Every loss recorded, oldest first (rows with an unknown reason are skipped).
std::vector<LeaseLossRecord> leaseLosses(Database& db);
// Forgets the losses of tasks whose job is no longer running: nothing leases them again.
[[nodiscard]] Expected<void> forgetFinishedLeaseLosses(Database& db);

} // namespace goblin::labnode
