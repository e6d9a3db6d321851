// A training job's rounds: each is a group of graph tasks the node submits for the researcher
// (GraphJobs::submitFor): the captured step on the round's batch, one verified task per
// micro-batch, loss and gradient averaged in float64. When it is done the node takes the round's
// `train-step` task (step_tasks.hpp): a worker takes the optimizer step (round_step.hpp) and the
// round commits (its record, the new parameters and state as blobs), deciding the step task,
// before the next starts — a commit that fails (a full disk) is tried again every second — so a
// node killed at any moment resumes from the last committed round — or re-attaches to the round's
// graph job — and reaches the same bits. Watchers get train_round
// after every round. Core thread; the step on a worker.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kinds/graph/graph_jobs.hpp"
#include "kinds/train/round_step.hpp"
#include "kinds/train/step_tasks.hpp"
#include "kinds/train/streamed_batches.hpp"
#include "kinds/train/training_job.hpp"
#include "node/node_context.hpp"
#include "node/peer_registry.hpp"
#include "node/researcher_desk.hpp"

namespace goblin::labnode {

class TrainingRounds {
public:
    struct Hooks {
        std::function<TrainingJob*(const std::string& jobId)> find; // a loaded job, or null
        std::function<void(TrainingJob&, const Error&)> fail;
        std::function<void(TrainingJob&)> finished; // its last round committed
    };

    TrainingRounds(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk,
                   GraphJobs& graphs, StreamedBatches& batches, Hooks hooks);

    // Starts the job's next round: submits its graph job, or waits for its streamed batch.
    void start(TrainingJob& job);
    // A resumed job: re-attached to its round's graph job when that is still loaded, else the
    // round starts again.
    void resume(TrainingJob& job);
    // Committed round `round` was found poisoned (an audit after a quarantine corrected its graph
    // job): the job goes back to the state it had before that round (its snapshot), the records
    // of that round and later ones go, the round in flight is cancelled, and training goes on
    // from there; each round trained again says `why` in its record (`redone`). False (logged,
    // nothing changed) when the state before that round is not kept or the rewind cannot be
    // recorded.
    bool rewind(TrainingJob& job, std::int64_t round, const std::string& why);
    // Whether the job's round is being stepped and committed (its step task is being decided).
    bool stepping(const TrainingJob& job) { return m_steps.taking(job); }
    // The job's step tasks, round by round of this run.
    std::vector<const Task*> steps(const TrainingJob& job) { return m_steps.stepsOf(job); }
    // The job failed or was cancelled: a step in flight never commits.
    void end(const TrainingJob& job, std::string_view why) { m_steps.cancel(job.id, why); }
    // The job is no longer loaded.
    void forget(const std::string& jobId) { m_steps.forget(jobId); }

private:
    // Follows the round's graph job; false when it is not loaded.
    bool follow(TrainingJob& job);
    void onDone(const std::string& jobId, const std::string& graphJob,
                const std::vector<core::Tensor>& outputs);
    void commit(const std::string& jobId, std::int64_t rewinds, Expected<RoundStep> step);

    NodeContext& m_context;
    PeerRegistry& m_peers;
    ResearcherDesk& m_desk;
    GraphJobs& m_graphs;
    StreamedBatches& m_batches;
    Hooks m_hooks;
    StepTasks m_steps;
};

} // namespace goblin::labnode
