#include "kinds/graph/graph_replan.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>

namespace goblin::labnode {

namespace asio = boost::asio;

GraphReplan::GraphReplan(NodeContext& context, GraphBook& book, GraphTaskSource& tasks,
                         const GraphIntakeSettings& settings, Reload reload)
    : m_context(context), m_book(book), m_tasks(tasks), m_settings(settings),
      m_reload(std::move(reload)) {}

bool GraphReplan::untouched(const GraphJob& job) const {
    if (job.state != JobState::Running || job.done > 0 || m_book.merging(job) ||
        job.redeciding > 0 || !job.redoPending.empty())
        return false;
    return std::all_of(job.taskIds.begin(), job.taskIds.end(), [&](std::int64_t taskId) {
        const GraphTask* task = m_book.task(taskId);
        const TaskState state = task ? m_book.state(*task) : TaskState::Cancelled;
        // Queued with nobody involved: no opinion of it is leased or in.
        return task && task->replicas.empty() && task->involved.empty() && !task->judging &&
               !task->nodeComputing && (state == TaskState::Waiting || state == TaskState::Queued);
    });
}

void GraphReplan::check() {
    const auto volunteers = m_tasks.graphVolunteers();
    if (volunteers.empty())
        return;
    const VolunteerPool pool = m_tasks.volunteerPool();
    const std::vector<std::string> jobIds = m_book.jobIds(); // sorted
    std::erase_if(m_tried, [&](const auto& entry) {
        return !std::binary_search(jobIds.begin(), jobIds.end(), entry.first);
    });
    for (const std::string& jobId : jobIds) {
        GraphJob* job = m_book.job(jobId);
        if (!job || !untouched(*job))
            continue;
        const bool allFit = std::all_of(job->taskIds.begin(), job->taskIds.end(), [&](auto id) {
            return std::any_of(volunteers.begin(), volunteers.end(), [&](const Peer* volunteer) {
                return m_book.fits(*m_book.task(id), volunteer->volunteer);
            });
        });
        if (allFit)
            continue;
        const std::int64_t budget = stageBudget(pool, opinionsWanted(*job), m_settings);
        if (auto tried = m_tried.find(jobId); tried != m_tried.end() && tried->second == budget)
            continue;
        m_tried[jobId] = budget; // the stored plan is read once per budget, not every check
        // A budget no smaller than the one it was cut for cuts it no smaller.
        const auto row = graphJob(m_context.store.database(), jobId);
        if (!row ||
            (plannedStageBudget(row->request) > 0 && budget >= plannedStageBudget(row->request)))
            continue;
        const auto ranges = static_cast<std::int64_t>(rangeCount(job->chunks));
        // Cutting is O(size): a worker does it, from the inputs the job holds.
        asio::post(m_context.workers, [this, jobId, submission = job->submission, ranges, budget,
                                       limits = m_settings.limits] {
            auto chunks = splitIntoChunks(submission, ranges, limits, StageBudget{budget});
            asio::post(m_context.core, [this, jobId, chunks = std::move(chunks), budget]() mutable {
                if (chunks)
                    replan(jobId, std::move(*chunks), budget);
            });
        });
    }
}

void GraphReplan::replan(const std::string& jobId, std::vector<GraphChunk> chunks,
                         std::int64_t budget) {
    GraphJob* job = m_book.job(jobId);
    if (!job || !untouched(*job))
        return; // something of it started meanwhile
    const auto volunteers = m_tasks.graphVolunteers();
    for (const GraphChunk& chunk : chunks)
        if (std::none_of(volunteers.begin(), volunteers.end(), [&](const Peer* volunteer) {
                return volunteer->volunteer.memoryBytes <= 0 ||
                       chunk.peakBytes <= volunteer->volunteer.memoryBytes;
            }))
            return; // cutting again does not help these volunteers
    Database& db = m_context.store.database();
    auto row = graphJob(db, jobId);
    if (!row)
        return;
    row->request = replannedRequest(row->request, chunks, budget);
    row->tasks = static_cast<std::int64_t>(chunks.size());
    auto tasks = replanGraphTasks(db, jobId, row->request, row->tasks);
    if (!tasks) {
        m_context.log.error("graph job " + jobId + " could not be planned again (" +
                            tasks.error().message + ")");
        return;
    }
    GraphIntake intake{job->submission, std::move(chunks), row->request, row->inputs, 0};
    // Its owner's tasks that wait on its merge (a training round's step) wait on the new one.
    const std::int64_t merge = job->mergeTask;
    const Task* merged = m_book.mergeTaskOf(*job);
    const std::vector<std::int64_t> waiting =
        merged ? merged->dependents : std::vector<std::int64_t>{};
    m_book.remove(jobId);
    auto reloaded = m_reload(*row, std::move(intake), *tasks);
    if (!reloaded) {
        m_context.log.error("graph job " + jobId + " could not be loaded again (" +
                            reloaded.error().message + ")");
        return;
    }
    m_book.engine().redirect(waiting, merge, (*reloaded)->mergeTask,
                             "its group " + jobId + " was planned again");
    m_context.log("graph job " + jobId + " planned again for the connected volunteers: " +
                  describeTasks((*reloaded)->chunks));
}

} // namespace goblin::labnode
