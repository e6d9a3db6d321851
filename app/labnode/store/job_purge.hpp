// Deletes a job's rows (`jobs purge`, and `serve --retain-hours`): the job, its tasks, their
// verdicts, leases and lost leases, in one transaction. Its blobs are the job kind's to delete
// first. Plain function on the node's connection (core thread).
#pragma once

#include <string>
#include <string_view>

#include "store/database.hpp"

namespace goblin::labnode {

// kind: "matmul", "graph" or "train" (its rounds' graph jobs are purged on their own).
[[nodiscard]] Expected<void> purgeJobRows(Database& db, std::string_view kind,
                                          const std::string& jobId);

} // namespace goblin::labnode
