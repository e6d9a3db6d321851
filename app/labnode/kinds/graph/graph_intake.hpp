// Intake of graph jobs: a submit_graph taken in on a worker (decoded, validated, split into chunks,
// inputs stored as blobs), the job and its tasks written in one transaction, and a job reloaded
// after a restart with the same checks and the same split (chunks are a pure function of the
// request, its inputs and the number of tasks). Functions; the thread is named on each.
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
};

struct GraphIntake {
    GraphSubmission submission;
    std::vector<GraphChunk> chunks;
    std::string request; // {"graph", "batch"} as submitted
    std::string inputs;  // the stored input tensors
    double flops = 0;    // what its chunks compute (graph_cost.hpp), for the quota
};

// Worker: everything O(size) about a submission. `volunteers` sets the number of chunks.
Expected<GraphIntake> takeInGraph(const net::Message& message, std::int64_t volunteers,
                                  const GraphIntakeSettings& settings, const BlobStore& blobs);

// Core: inserts the job and one task per chunk; returns the tasks' rows.
Expected<std::vector<GraphTaskRow>> insertGraphJobAndTasks(Database& db, const GraphJobRow& job);

// Core, at start-up: the submission and chunks of a stored job.
Expected<GraphIntake> reloadGraphIntake(const GraphJobRow& row, const GraphIntakeSettings& settings,
                                        const BlobStore& blobs);

} // namespace goblin::labnode
