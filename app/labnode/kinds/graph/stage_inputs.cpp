#include "kinds/graph/stage_inputs.hpp"

#include <set>
#include <string>

#include "kinds/graph/graph_store.hpp"
#include "kinds/graph/task_verdicts.hpp"

namespace goblin::labnode {

StageInputs::StageInputs(NodeContext& context, GraphBook& book, Scheduler& scheduler,
                         FailJob failJob)
    : m_context(context), m_book(book), m_scheduler(scheduler), m_failJob(std::move(failJob)) {}

Expected<void> StageInputs::fillQueued(GraphJob& job, const std::vector<std::int64_t>& tasks) {
    for (std::int64_t taskId : tasks)
        if (const GraphTask* task = m_book.task(taskId);
            task && task->jobId == job.id && m_book.state(*task) == TaskState::Queued)
            if (auto filled = m_book.fillInputs(*task); !filled)
                return filled;
    return {};
}

void StageInputs::onOutputsReplaced(GraphTask& task) {
    GraphJob& job = m_book.jobOf(task);
    if (job.state != JobState::Running || m_book.dependentsOf(task).empty())
        return;
    job.redoPending.insert(task.id);
    redoIfPending(job);
}

bool StageInputs::busy(const GraphTask& task) const {
    return task.judging || task.nodeComputing || task.redeciding ||
           m_book.state(task) == TaskState::Deciding;
}

void StageInputs::redoIfPending(GraphJob& job) {
    if (job.state != JobState::Running || job.redoPending.empty())
        return;
    std::set<std::int64_t> affected;
    for (std::int64_t taskId : job.redoPending)
        for (std::int64_t dependent : m_book.dependentsOf(*m_book.task(taskId))) {
            if (busy(*m_book.task(dependent)))
                return; // a decision in flight: tried again once it ends
            affected.insert(dependent);
        }
    std::set<std::int64_t> wasDecided;
    for (std::int64_t taskId : affected)
        if (m_book.decided(*m_book.task(taskId)))
            wasDecided.insert(taskId);
    Database& db = m_context.store.database();
    auto written = [&]() -> Expected<void> {
        auto transaction = Transaction::begin(db);
        if (!transaction)
            return tl::unexpected(transaction.error());
        for (std::int64_t taskId : wasDecided)
            if (auto ok = setGraphTaskQueued(db, taskId); !ok)
                return ok;
        return transaction->commit();
    }();
    if (!written)
        return m_failJob(job, Error{ErrorCode::Internal, written.error().message});
    for (std::int64_t taskId : job.redoPending)
        m_book.redoDependents(*m_book.task(taskId),
                              "the node replaced the outputs of task " + std::to_string(taskId));
    for (std::int64_t taskId : affected) {
        // A result still computing for it is answered stale.
        m_scheduler.withdraw(TaskVerdicts::kOp, taskId);
        GraphTask& task = *m_book.task(taskId);
        task.replicas.clear();
        task.replicaPeers.clear();
        task.involved.clear();
        task.addresses.clear();
        task.audited = task.tiebreak = task.nodeOutputs = false;
        task.outputs.clear();
        if (wasDecided.contains(taskId))
            --job.done;
    }
    if (auto filled = fillQueued(job, {affected.begin(), affected.end()}); !filled)
        return m_failJob(job, filled.error());
    m_context.log.warn("graph job " + job.id + ": " + std::to_string(affected.size()) +
                       " task(s) read outputs the node replaced; they are computed again");
    job.redoPending.clear();
    m_scheduler.wake();
}

void StageInputs::redoWherePending() {
    for (const std::string& jobId : m_book.jobIds())
        if (GraphJob* job = m_book.job(jobId); job && !job->redoPending.empty())
            redoIfPending(*job);
}

} // namespace goblin::labnode
