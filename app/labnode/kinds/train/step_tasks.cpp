#include "kinds/train/step_tasks.hpp"

#include <cassert>

namespace goblin::labnode {

namespace {

// The chain's index of the job's next round.
std::size_t nextIndex(const TrainingJob& job) {
    return static_cast<std::size_t>(job.roundsDone);
}

} // namespace

void StepTasks::waitOnGroup(const TrainingJob& job, std::int64_t merge, std::string_view cause) {
    if (job.state != JobState::Running)
        return;
    const std::vector<std::int64_t>& chain = chainOf(job);
    const std::size_t next = nextIndex(job);
    if (next >= chain.size())
        return;
    std::vector<std::int64_t> dependencies;
    if (next > 0)
        dependencies.push_back(chain[next - 1]);
    if (merge != 0)
        dependencies.push_back(merge);
    m_engine.replan(chain[next], std::move(dependencies), cause);
}

bool StepTasks::take(const TrainingJob& job, std::string_view cause) {
    if (job.state != JobState::Running)
        return false;
    const std::vector<std::int64_t>& chain = chainOf(job);
    const std::size_t next = nextIndex(job);
    // Queued: the round before's step and the group's merge are decided.
    return next < chain.size() && m_engine.state(chain[next]) == TaskState::Queued &&
           m_engine.takeForDecision(chain[next], cause);
}

bool StepTasks::taking(const TrainingJob& job) {
    const std::vector<std::int64_t>& chain = chainOf(job);
    const std::size_t next = nextIndex(job);
    return next < chain.size() && m_engine.state(chain[next]) == TaskState::Deciding;
}

void StepTasks::decide(const TrainingJob& job, std::string_view cause) {
    std::vector<std::int64_t>& chain = chainOf(job);
    const std::size_t next = nextIndex(job);
    assert(next < chain.size() && m_engine.state(chain[next]) == TaskState::Deciding &&
           "only a step being taken commits");
    if (next >= chain.size() || m_engine.state(chain[next]) != TaskState::Deciding)
        return;
    m_engine.decide(chain[next], cause); // queues a later step a rewind sent back, if any
    if (next + 1 == chain.size() && job.roundsDone + 1 < job.submission.plan.rounds)
        plan(job, chain, Reloaded::Undecided, "the round before committed");
}

void StepTasks::reopen(const TrainingJob& job, std::int64_t roundIndex, std::string_view cause) {
    const std::vector<std::int64_t>& chain = chainOf(job);
    if (roundIndex < 0 || roundIndex >= job.roundsDone)
        return;
    m_engine.reopen(chain[static_cast<std::size_t>(roundIndex)], cause);
}

void StepTasks::cancel(const std::string& jobId, std::string_view cause) {
    m_engine.cancelJob(jobId, cause);
}

void StepTasks::forget(const std::string& jobId) {
    m_engine.removeJob(jobId);
    m_chains.erase(jobId);
}

std::vector<const Task*> StepTasks::stepsOf(const TrainingJob& job) {
    std::vector<const Task*> steps;
    for (std::int64_t id : chainOf(job))
        steps.push_back(m_engine.task(id));
    return steps;
}

std::vector<std::int64_t>& StepTasks::chainOf(const TrainingJob& job) {
    const std::size_t next = nextIndex(job);
    const bool ended = job.roundsDone >= job.submission.plan.rounds;
    if (auto found = m_chains.find(job.id); found != m_chains.end()) {
        std::vector<std::int64_t>& chain = found->second;
        if (job.state != JobState::Running) // an ended job's steps stay as they ended
            return chain;
        const TaskState nextState =
            next < chain.size() ? m_engine.state(chain[next]) : TaskState::Cancelled;
        // Waiting: on its group's merge (the steps before it are decided, by the count).
        if (m_engine.decidedCount(job.id) == job.roundsDone && chain.size() >= next &&
            (ended || nextState == TaskState::Waiting || nextState == TaskState::Queued ||
             nextState == TaskState::Deciding))
            return chain;
    }
    m_engine.removeJob(job.id);
    std::vector<std::int64_t>& chain = m_chains[job.id];
    chain.clear();
    for (std::int64_t round = 0; round < job.roundsDone; ++round)
        plan(job, chain, Reloaded::Decided, "reloaded: its round had committed");
    if (!ended)
        plan(job, chain, Reloaded::Undecided, "reloaded: the next round to train");
    return chain;
}

void StepTasks::plan(const TrainingJob& job, std::vector<std::int64_t>& chain, Reloaded reloaded,
                     std::string_view cause) {
    std::vector<std::int64_t> dependencies;
    if (!chain.empty())
        dependencies.push_back(chain.back());
    TaskSpec spec{.id = m_engine.nodeTaskId(),
                  .job = job.id,
                  .type = std::string(kTaskType),
                  .dependencies = std::move(dependencies),
                  .attempt = 0,
                  .opinions = 1};
    chain.push_back(spec.id);
    m_engine.add(std::move(spec), cause, reloaded);
}

} // namespace goblin::labnode
