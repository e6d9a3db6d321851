// Durable records of graph jobs: the job, its tasks and every replica's verdict (schema in
// node_store.cpp). Callers group writes in a Transaction. Core thread only, like NodeStore.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "goblin/core/error.hpp"
#include "store/database.hpp"
#include "work/group_owner.hpp"
#include "work/job_state.hpp"

namespace goblin::labnode {

struct GraphJobRow {
    std::string id;
    std::int64_t researcherId = 0;
    JobState state = JobState::Running;
    std::int64_t tasks = 0;
    std::string request; // {"graph": …, "batch": …}
    std::string inputs;  // stored tensors (graph_blobs.hpp)
    double createdAt = 0;
    GroupOwner owner; // a training job's round, or none
};

struct GraphTaskRow {
    std::int64_t id = 0;
    std::int64_t chunk = 0;
    bool accepted = false;
    std::string outputs;          // stored tensors, when accepted
    std::int64_t lastAttempt = 0; // the highest attempt leased or with a recorded verdict
};

// Counts for a graph job's summary, from its recorded verdicts.
struct GraphSummaryCounts {
    std::int64_t accepted = 0, rejected = 0, volunteers = 0;
    std::int64_t audited = 0, caught = 0, tiebreaks = 0; // tasks the node audited, caught, decided
    double worstRatio = 0;
    std::vector<std::pair<std::string, std::int64_t>> backends;
};

// A job as it is accepted: recorded running (`job.state` is not read; setGraphJobState moves it).
Expected<void> insertGraphJob(Database& db, const GraphJobRow& job);
Expected<std::int64_t> insertGraphTask(Database& db, const std::string& jobId, std::int64_t chunk);
// Tasks for chunks 0 … count − 1 of a job, queued; their rows.
Expected<std::vector<GraphTaskRow>> insertGraphTasks(Database& db, const std::string& jobId,
                                                     std::int64_t count);
Expected<void> setGraphTaskAccepted(Database& db, std::int64_t taskId, const std::string& outputs);
// A task to compute again (a stage whose input was replaced): queued, with no outputs; its
// verdicts stay.
Expected<void> setGraphTaskQueued(Database& db, std::int64_t taskId);
// A decided task rechecked by the node: its outputs become the node's. Returns the stored list it
// replaced, whose blobs the caller deletes once the change is committed (deleteUnusedBlobs).
Expected<std::string> replaceGraphTaskOutputs(Database& db, std::int64_t taskId,
                                              const std::string& outputs);
// An accepted replica found wrong afterwards: rejected, and its volunteer's counters moved.
Expected<void> overturnGraphVerdict(Database& db, std::int64_t taskId, std::int64_t attempt,
                                    const std::string& volunteerId, const std::string& method,
                                    const std::string& reason);
// A job none of whose tasks has a result yet, planned again: its task rows (and their lease
// records) replaced by `tasks` new ones, its stored request by `request`; the new rows.
Expected<std::vector<GraphTaskRow>> replanGraphTasks(Database& db, const std::string& jobId,
                                                     const std::string& request,
                                                     std::int64_t tasks);
Expected<void> setGraphJobState(Database& db, const std::string& id, JobState state, double now);
std::optional<GraphJobRow> graphJob(Database& db, const std::string& id);
// Jobs to load at start-up: running ones resume, done ones wait for their researcher.
std::vector<GraphJobRow> unreleasedGraphJobs(Database& db);
// The groups `ownerJob` ran as its rounds, oldest first.
std::vector<std::string> graphJobsOwnedBy(Database& db, const std::string& ownerJob);
std::vector<GraphTaskRow> graphTasksOf(Database& db, const std::string& jobId);
GraphSummaryCounts graphSummaryCounts(Database& db, const std::string& jobId);

} // namespace goblin::labnode
