// Durable leases of every job kind: (kind, task, attempt) → volunteer, lease time and deadline, so
// attempt numbers never repeat across restarts. Core thread only, like NodeStore.
#pragma once

#include <cstdint>
#include <string>

#include "database.hpp"
#include "goblin/core/error.hpp"

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

} // namespace goblin::labnode
