// Durable records of training rewinds (docs/training.md, "Rewinds"): the state a training job had
// before each of its rounds (train_snapshots), every rewind (train_rewinds: which committed
// rounds were trained again, and why) and the late catches of jobs that had ended
// (train_late_catches). Schema in store/schema.cpp. Callers group
// writes in a Transaction. Core thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "goblin/core/error.hpp"
#include "store/database.hpp"

namespace goblin::labnode {

// A committed round of a training job (its absolute number).
struct TrainRoundRef {
    std::string jobId;
    std::int64_t round = 0;
};

// Records the state before round `round` (stored tensors, as train_jobs.params) unless it is
// recorded already.
Expected<void> keepTrainSnapshot(Database& db, const std::string& jobId, std::int64_t round,
                                 const std::string& params);
std::optional<std::string> trainSnapshot(Database& db, const std::string& jobId,
                                         std::int64_t round);
// Deletes the job's snapshots; returns what they held, for the caller to delete unused blobs.
Expected<std::vector<std::string>> dropTrainSnapshots(Database& db, const std::string& jobId);
// The training job and round that ran as graph job `graphJob`, if one did.
std::optional<TrainRoundRef> trainRoundOfGraphJob(Database& db, const std::string& graphJob);

struct TrainRewind {
    std::int64_t round = 0;      // the first round trained again (absolute)
    std::int64_t roundsDone = 0; // the job's rounds committed after it (round − first round)
    std::int64_t end = 0;        // the round the job was at: rounds [round, end) are trained again
    std::string params;          // the snapshot of `round`, the job's state from now on
    std::string why;
};
// Why round `round` is trained again (the latest rewind that undid it), or empty.
std::string whyRedone(Database& db, const std::string& jobId, std::int64_t round);

// The records of rounds ≥ `round` go, the job's state becomes the snapshot's, the rewind is
// recorded, and the snapshots of later rounds (states of the rounds undone) go: returns what they
// held, for the caller to delete unused blobs once this commits.
Expected<std::vector<std::string>> rewindTrainJob(Database& db, const std::string& jobId,
                                                  const TrainRewind& rewind, double now);

// A late catch (table train_late_catches): a round of a job that had ended was found poisoned and
// the node trains the job again from that round (its stored state, done or retained, stays).
struct LateCatch {
    std::string graphJob;
    std::string reason;
    bool ended = false;
    std::string error; // why the retraining could not end with the job trained again
    double startedAt = 0;
};
Expected<void> insertLateCatch(Database& db, const std::string& jobId, const LateCatch& caught,
                               double now);
// Ends the job's running late catch (`error` empty: the job is trained again).
Expected<void> endLateCatch(Database& db, const std::string& jobId, const std::string& error,
                            double now);
// Oldest first.
std::vector<LateCatch> lateCatchesOf(Database& db, const std::string& jobId);
// Jobs with a late catch still retraining (a restarted node resumes them).
std::vector<std::string> jobsRetraining(Database& db);

} // namespace goblin::labnode
