// The task engine's graph, durable (tables engine_tasks and task_dependencies): a kind records
// the tasks it plans with what they wait on, their attempts as they are leased and their decision
// in the transaction that commits it; after a restart the running job's graph is reloaded into a
// TaskGraph — decided tasks stay decided (never computed again), the others are queued or wait on
// their dependencies, and attempts continue past the stored ones. Core thread only, like
// NodeStore.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "goblin/core/error.hpp"
#include "store/database.hpp"
#include "work/task_graph.hpp"

namespace goblin::labnode {

struct StoredTask {
    TaskSpec spec; // its attempt is the last one leased
    bool decided = false;
};

// Records the job's planned tasks (each task's dependencies must be recorded before or with it).
// Run it in the transaction that records the job, so a job never exists without its graph.
[[nodiscard]] Expected<void> recordTasks(Database& db, std::string_view kind,
                                         const std::vector<TaskSpec>& tasks);
[[nodiscard]] Expected<void> recordTaskAttempt(Database& db, std::string_view kind,
                                               std::int64_t task, std::int64_t attempt);
// Decided, or undecided again (reopened).
[[nodiscard]] Expected<void> recordTaskDecided(Database& db, std::string_view kind,
                                               std::int64_t task, bool decided);
// The job's recorded tasks, each after the tasks it waits on; the error reloadTasks gives.
Expected<std::vector<StoredTask>> storedTasks(Database& db, std::string_view kind,
                                              const std::string& job);
// Forgets the job's tasks (the job was purged).
[[nodiscard]] Expected<void> forgetTasks(Database& db, std::string_view kind,
                                         const std::string& job);

// Adds the job's stored tasks to `graph` as they stood. Internal error when a dependency was
// never recorded, or the dependencies form a cycle (a damaged database): nothing is added then.
[[nodiscard]] Expected<void> reloadTasks(Database& db, std::string_view kind,
                                         const std::string& job, TaskGraph& graph);

} // namespace goblin::labnode
