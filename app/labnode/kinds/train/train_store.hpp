// Durable records of training jobs: the job (request, stored inputs, current parameters and
// optimizer state, rounds committed, the round's graph job) and one row per committed round
// (schema in node_store.cpp). Callers group writes in a Transaction. Core thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "goblin/core/error.hpp"
#include "store/database.hpp"
#include "work/job_state.hpp"

namespace goblin::labnode {

struct TrainJobRow {
    std::string id;
    std::int64_t researcherId = 0;
    JobState state = JobState::Running;
    std::string request;
    std::string inputs;
    std::string params; // stored tensors: the flat parameters, then the optimizer state
    std::int64_t roundsDone = 0;
    std::string roundJob; // empty when no round is in flight
    std::string error;
    double createdAt = 0;
};

struct TrainRoundRow {
    std::int64_t round = 0; // absolute (a resumed run's first round continues its count)
    double loss = 0, gradNorm = 0;
    std::int64_t tasks = 0, rejected = 0, nodeAudited = 0, nodeDecided = 0;
    double seconds = 0;
    double verificationSeconds = 0; // the node's comparisons and audits of the round's tasks
    std::string graphJob;
    std::string redone; // why it was trained again after a rewind, or empty (not stored here)
};

Expected<void> insertTrainJob(Database& db, const TrainJobRow& job, double now);
Expected<void> setTrainRoundJob(Database& db, const std::string& id, const std::string& graphJob,
                                double now);
// The round's row, the new parameters and optimizer state, and the job's next state.
Expected<void> commitTrainRound(Database& db, const std::string& id, const TrainRoundRow& round,
                                const std::string& params, JobState state, double now);
Expected<void> setTrainJobState(Database& db, const std::string& id, JobState state,
                                const std::string& error, double now);
std::optional<TrainJobRow> trainJob(Database& db, const std::string& id);
// Jobs to load at start-up: running ones continue, done and failed ones wait for their researcher.
std::vector<TrainJobRow> unreleasedTrainJobs(Database& db);
// Whether the graph job of one of its committed rounds keeps its data for audits (retained).
bool anyRoundKeptForAudits(Database& db, const std::string& id);
// Jobs released while their data was kept for audits (state 'retained', not retraining after a
// late catch, no round's graph job being rechecked: a correction there trains it again) whose
// last change was before `endedBefore`.
std::vector<std::string> retainedTrainJobsDue(Database& db, double endedBefore);
std::vector<TrainRoundRow> trainRounds(Database& db, const std::string& id);
// A streamed job's batch held for training: x then y as stored tensors; empty `tensors` marks
// where the data ended (docs/protocol.md, "Streamed training data").
struct TrainBatchRow {
    std::int64_t batch = 0;
    std::string tensors;
};
Expected<void> insertTrainBatch(Database& db, const std::string& id, const TrainBatchRow& batch);
// In batch order.
std::vector<TrainBatchRow> trainBatches(Database& db, const std::string& id);
Expected<void> deleteTrainBatch(Database& db, const std::string& id, std::int64_t batch);
// Every batch row of the job; the caller deletes their blobs.
Expected<void> deleteTrainBatches(Database& db, const std::string& id);
// Its last committed round, when it has one.
std::optional<TrainRoundRow> lastTrainRound(Database& db, const std::string& id);

} // namespace goblin::labnode
