#include "job_book.hpp"

#include <algorithm>
#include <cassert>

namespace goblin::labnode {

core::MatrixView RunningJob::aView() const {
    return core::MatrixView{record.dtype, a->bytes().data(), record.m, record.k, record.k};
}

core::MatrixView RunningJob::bView() const {
    return core::MatrixView{record.dtype, b->bytes().data(), record.k, record.n, record.n};
}

void JobBook::addJob(RunningJob job, std::vector<TileTask> tasks) {
    const std::string id = job.record.id;
    job.totalTiles = static_cast<std::int64_t>(tasks.size());
    job.acceptedTiles = 0;
    for (TileTask& task : tasks) {
        if (task.state == TaskState::Accepted) {
            ++job.acceptedTiles;
        } else {
            task.state = TaskState::Queued;
            m_queue.push_back(task.id);
        }
        m_tasks.emplace(task.id, std::move(task));
    }
    m_jobs.emplace(id, std::move(job));
}

void JobBook::removeJob(const std::string& jobId) {
    std::erase_if(m_tasks, [&](const auto& entry) { return entry.second.jobId == jobId; });
    std::erase_if(m_queue, [&](std::int64_t id) { return !m_tasks.contains(id); });
    m_jobs.erase(jobId);
}

std::vector<std::int64_t> JobBook::taskIdsOf(const std::string& jobId) const {
    std::vector<std::int64_t> ids;
    for (const auto& [id, task] : m_tasks)
        if (task.jobId == jobId)
            ids.push_back(id);
    return ids;
}

RunningJob* JobBook::job(const std::string& jobId) {
    auto it = m_jobs.find(jobId);
    return it == m_jobs.end() ? nullptr : &it->second;
}

TileTask* JobBook::task(std::int64_t taskId) {
    auto it = m_tasks.find(taskId);
    return it == m_tasks.end() ? nullptr : &it->second;
}

std::optional<std::int64_t> JobBook::takeNextFor(const std::string& volunteerId,
                                                 const std::set<std::string>* dtypes,
                                                 const std::function<bool(std::int64_t)>* mayTake) {
    for (auto it = m_queue.begin(); it != m_queue.end(); ++it) {
        const TileTask& candidate = m_tasks.at(*it);
        if (candidate.refusedBy.contains(volunteerId))
            continue;
        if (dtypes &&
            !dtypes->contains(std::string(core::wireName(m_jobs.at(candidate.jobId).record.dtype))))
            continue;
        if (mayTake && !(*mayTake)(*it))
            continue;
        const std::int64_t id = *it;
        m_queue.erase(it);
        return id;
    }
    return std::nullopt;
}

void JobBook::markLeased(std::int64_t taskId, std::int64_t attempt) {
    TileTask& leased = m_tasks.at(taskId);
    leased.state = TaskState::Leased;
    leased.attempt = attempt;
}

void JobBook::requeue(std::int64_t taskId) {
    TileTask* found = task(taskId);
    if (!found || found->state == TaskState::Accepted || found->state == TaskState::Queued)
        return;
    found->state = TaskState::Queued;
    m_queue.push_front(taskId);
}

bool JobBook::takeForNode(std::int64_t taskId) {
    TileTask* found = task(taskId);
    if (!found || (found->state != TaskState::Queued && found->state != TaskState::Leased))
        return false;
    std::erase(m_queue, taskId);
    found->state = TaskState::Verifying;
    return true;
}

void JobBook::refuse(std::int64_t taskId, const std::string& volunteerId) {
    if (TileTask* found = task(taskId))
        found->refusedBy.insert(volunteerId);
}

bool JobBook::accept(std::int64_t taskId) {
    TileTask& accepted = m_tasks.at(taskId);
    assert(accepted.state != TaskState::Accepted && "a task is accepted once");
    accepted.state = TaskState::Accepted;
    RunningJob& owner = m_jobs.at(accepted.jobId);
    ++owner.acceptedTiles;
    return owner.acceptedTiles == owner.totalTiles;
}

} // namespace goblin::labnode
