// What lab staff asked a running node to do to a job (`goblin-labnode jobs cancel|purge`): the
// staff command records a request in the database, the node's two-second staff check carries it
// out and records the outcome, which the command waits for. Table job_requests (node_store.cpp's
// schema). Plain functions on the caller's connection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/database.hpp"

namespace goblin::labnode {

enum class JobAction { Cancel, Purge };

struct JobRequestRow {
    std::int64_t id = 0;
    std::string jobId;
    JobAction action = JobAction::Cancel;
};

// Records a request; returns its id.
[[nodiscard]] Expected<std::int64_t> requestJobAction(Database& db, const std::string& jobId,
                                                      JobAction action, double now);
// Requests not carried out yet, oldest first.
std::vector<JobRequestRow> pendingJobRequests(Database& db);
// `outcome`: "ok", or why the node refused.
[[nodiscard]] Expected<void> finishJobRequest(Database& db, std::int64_t id,
                                              const std::string& outcome, double now);
// The outcome once the node carried the request out; nullopt while it is pending.
std::optional<std::string> jobRequestOutcome(Database& db, std::int64_t id);

} // namespace goblin::labnode
