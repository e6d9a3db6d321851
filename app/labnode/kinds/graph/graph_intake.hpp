// Intake of graph jobs: a submit_graph taken in on a worker (decoded, validated, split into chunks
// and, where a chunk would not fit the volunteers, stages; inputs stored as blobs), the job and its
// tasks written in one transaction, and a job reloaded after a restart with the same checks and
// the same split (chunks are a pure function of the request, its inputs, the number of batch
// ranges and the stage budget, the last two stored with the request). Functions; the thread is
// named on each.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "goblin/net/message.hpp"
#include "kinds/graph/graph_chunks.hpp"
#include "kinds/graph/graph_store.hpp"
#include "store/blob_store.hpp"
#include "store/database.hpp"

namespace goblin::labnode {

struct GraphIntakeSettings {
    core::graph::GraphLimits limits;
    // Largest task, counted as every value of its chunk at once: the node may recompute any task.
    std::int64_t maxTaskBytes = std::int64_t{4} << 30;
    // With no volunteer connected, tasks are planned to fit one that lends this much (0: they
    // are not cut into stages until volunteers are there to say what they lend).
    std::int64_t planVolunteerBytes = 0;
};

// The connected volunteers a job is planned for: how many, and the memory the largest and the
// second largest of them lend (0: not limited).
struct VolunteerPool {
    std::int64_t count = 0;
    std::int64_t largestBytes = 0;
    std::int64_t secondBytes = 0;
};

// The most a task may hold so that the volunteers it needs can take it (the second largest when
// it wants two opinions and two are there), never above the node's own limit.
std::int64_t stageBudget(const VolunteerPool& pool, int opinions,
                         const GraphIntakeSettings& settings);

// A checked submission cut for the pool: its chunks (one per volunteer unless the request says,
// stages where a range does not fit), the stage budget and the opinions each task wants;
// LimitExceeded when a chunk holds more than the node allows any task (it could not be cut), and
// with Unfittable::Refused when one of a range's values alone is bigger than the largest
// volunteer lends (no split fits it); a training round's job (Unfittable::Waits) waits instead,
// as bigger volunteers may come back between rounds.
enum class Unfittable { Refused, Waits };
struct PlannedChunks {
    std::vector<GraphChunk> chunks;
    std::int64_t budget = 0;
    int opinions = 2;
};
Expected<PlannedChunks> planChunks(const GraphSubmission& submission, const VolunteerPool& pool,
                                   const GraphIntakeSettings& settings,
                                   Unfittable unfittable = Unfittable::Refused);

struct GraphIntake {
    GraphSubmission submission;
    std::vector<GraphChunk> chunks;
    std::string request; // {"graph", "batch", "verification"} as submitted, and the node's plan
    std::string inputs;  // the stored input tensors
    double flops = 0;    // what its chunks compute (graph_cost.hpp), for the quota
};

// Worker: everything O(size) about a submission. The pool sets the number of chunks (one per
// volunteer unless the request says) and the stage budget.
Expected<GraphIntake> takeInGraph(const net::Message& message, const VolunteerPool& pool,
                                  const GraphIntakeSettings& settings, const BlobStore& blobs,
                                  Unfittable unfittable = Unfittable::Refused);

// Core: inserts the job and one task per chunk; returns the tasks' rows.
Expected<std::vector<GraphTaskRow>> insertGraphJobAndTasks(Database& db, const GraphJobRow& job);

// The stage budget a stored request was planned with (0: not cut, or stored before stages).
std::int64_t plannedStageBudget(const std::string& request);
// The stored request planned again into these chunks with this budget.
std::string replannedRequest(const std::string& request, const std::vector<GraphChunk>& chunks,
                             std::int64_t budget);

// Core, at start-up: the submission and chunks of a stored job.
Expected<GraphIntake> reloadGraphIntake(const GraphJobRow& row, const GraphIntakeSettings& settings,
                                        const BlobStore& blobs);

} // namespace goblin::labnode
