// A training job's optimizer steps as tasks of the job on the task engine (work/task_graph.hpp)
// the graph kind's tasks live on: one `train-step` task per round, decided by the node, each
// waiting on the round before's step and on the merge of its round's group of graph tasks, so the
// engine holds the rounds in order and a rewind is the engine's reopen. A round's step is queued
// once the round before committed and its group's merge is decided; the node takes it (Queued →
// Deciding) when the group is done — it then takes the step on a worker, retrying the commit
// while it cannot be written — and it is decided when the round commits, which plans the next
// round's step (a task decided → more tasks). Rewinding to round r reopens r's step: the steps
// after it wait again, and each waits on its round's new group once that runs. A running job's
// chain is rebuilt from what is durable, its committed rounds
// (`roundsDone`), whenever it does not agree with them (a node restarted, a job loaded again, an
// ended job trained again after a late catch): those steps decided, the next one queued; an
// ended job's steps stay as they ended. No I/O. Core thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kinds/train/training_job.hpp"
#include "work/task_graph.hpp"

namespace goblin::labnode {

class StepTasks {
public:
    // On `engine`, the graph kind's (GraphJobs::taskEngine()).
    explicit StepTasks(TaskGraph& engine) : m_engine(engine) {}

    // The job's next round runs as a group whose merge is the task `merge` (0: none loaded): its
    // step waits on that merge and on the round before's step, no earlier group's.
    void waitOnGroup(const TrainingJob& job, std::int64_t merge, std::string_view cause);
    // The node takes the step of the job's next round (its round's group is done) to decide it:
    // Queued → Deciding. False when that step is not queued (it waits on the round before's or
    // on its group's merge, or it is being taken already) or the job is not running.
    bool take(const TrainingJob& job, std::string_view cause);
    // Whether the step of the job's next round is being taken (Deciding).
    bool taking(const TrainingJob& job);
    // The step being taken committed (before the job counts the round): Decided, and the next
    // round's step is queued (planned unless it was the last round).
    void decide(const TrainingJob& job, std::string_view cause);
    // The job goes back to the start of the round `roundIndex` of this run (< its committed
    // rounds): that round's step is queued again and the later ones wait again.
    void reopen(const TrainingJob& job, std::int64_t roundIndex, std::string_view cause);
    // The job fails or was cancelled: its steps end (Cancelled), and stay so while it is not
    // running.
    void cancel(const std::string& jobId, std::string_view cause);
    // The job is no longer loaded.
    void forget(const std::string& jobId);
    // The job's steps, round by round of this run (the chain, rebuilt if it must be).
    std::vector<const Task*> stepsOf(const TrainingJob& job);

    static constexpr std::string_view kTaskType = "train-step";

private:
    // The job's chain, agreeing with its committed rounds.
    std::vector<std::int64_t>& chainOf(const TrainingJob& job);
    // Adds the step of the chain's next round, waiting on the chain's last step.
    void plan(const TrainingJob& job, std::vector<std::int64_t>& chain, Reloaded reloaded,
              std::string_view cause);

    TaskGraph& m_engine;
    std::map<std::string, std::vector<std::int64_t>> m_chains;
};

} // namespace goblin::labnode
