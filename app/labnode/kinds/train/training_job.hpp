// One training job as the node runs it: its parameters and optimizer state, the rounds it
// committed, the round in flight, and a streamed job's held batches. Core thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "goblin/core/tensor.hpp"
#include "kinds/train/train_submission.hpp"
#include "work/job_state.hpp"

namespace goblin::labnode {

struct TrainingJob {
    std::string id;
    std::int64_t researcher = 0;
    JobState state = JobState::Running; // running, done, failed, cancelled, retained (loaded)
    TrainSubmission submission;
    core::Tensor params;
    std::vector<core::Tensor> optimizerState;
    std::string storedParams; // their stored tensors (train_jobs.params)
    std::int64_t roundsDone = 0;
    std::string roundJob;
    std::string error; // why it failed, or who cancelled it
    double roundStarted = 0;
    std::int64_t commitRetries = 0; // the round's commit failed this often (a full disk)
    std::int64_t rewinds = 0;       // a step taken before the latest rewind never commits
    // Set while a late catch trains a job that had ended again (state running in memory): the
    // state it keeps in the store meanwhile and returns to, done or retained.
    std::optional<JobState> retraining;
    // Streamed data (streamed_batches.hpp): batches held for the rounds to come (stored
    // tensors), the next batch the node expects, whether the data ended, whether the round waits
    // for its batch.
    std::map<std::int64_t, std::string> batches;
    std::int64_t nextBatch = 1;
    bool dataEnded = false;
    bool waitingForBatch = false;

    // The state a round's commit stores: running until the last round, then done (for a job
    // trained again after a late catch, the state it had).
    JobState storedState(bool lastRound) const {
        return retraining ? *retraining : lastRound ? JobState::Done : JobState::Running;
    }
    // The absolute number of the round it runs next (a resumed run continues its count).
    std::int64_t round() const { return submission.plan.firstRound + roundsDone; }
};

} // namespace goblin::labnode
