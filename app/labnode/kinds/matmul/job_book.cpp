#include "kinds/matmul/job_book.hpp"

#include <cassert>

namespace goblin::labnode {

core::MatrixView RunningJob::aView() const {
    return core::MatrixView{record.dtype, a->bytes().data(), record.m, record.k, record.k};
}

core::MatrixView RunningJob::bView() const {
    return core::MatrixView{record.dtype, b->bytes().data(), record.k, record.n, record.n};
}

void JobBook::addJob(RunningJob job, std::vector<PlannedTile> tiles) {
    const std::string id = job.record.id;
    for (PlannedTile& planned : tiles) {
        TaskSpec spec{planned.tile.id, id, std::string(kTileTaskType), {}, planned.attempt};
        m_engine.add(std::move(spec), planned.accepted ? "reloaded, accepted before" : "planned",
                     planned.accepted ? Reloaded::Decided : Reloaded::Undecided);
        m_tiles.emplace(planned.tile.id, std::move(planned.tile));
    }
    m_jobs.emplace(id, std::move(job));
}

void JobBook::removeJob(const std::string& jobId) {
    for (std::int64_t id : m_engine.tasksOf(jobId))
        m_tiles.erase(id);
    m_engine.removeJob(jobId);
    m_jobs.erase(jobId);
}

std::vector<std::int64_t> JobBook::taskIdsOf(const std::string& jobId) const {
    return m_engine.tasksOf(jobId);
}

RunningJob* JobBook::job(const std::string& jobId) {
    auto it = m_jobs.find(jobId);
    return it == m_jobs.end() ? nullptr : &it->second;
}

TileTask* JobBook::task(std::int64_t taskId) {
    auto it = m_tiles.find(taskId);
    return it == m_tiles.end() ? nullptr : &it->second;
}

std::int64_t JobBook::attempt(std::int64_t taskId) const {
    const Task* found = m_engine.task(taskId);
    return found ? found->attempt : 0;
}

std::optional<LeasedTask> JobBook::leaseNextFor(const std::string& volunteerId,
                                                const std::set<std::string>* dtypes,
                                                const std::function<bool(std::int64_t)>* mayTake) {
    const auto allowed = [&](const Task& candidate) {
        const TileTask& tile = m_tiles.at(candidate.id);
        if (tile.refusedBy.contains(volunteerId))
            return false;
        if (dtypes &&
            !dtypes->contains(std::string(core::wireName(m_jobs.at(tile.jobId).record.dtype))))
            return false;
        return !mayTake || (*mayTake)(candidate.id);
    };
    return m_engine.lease(allowed, "leased to a volunteer");
}

bool JobBook::takeForNode(std::int64_t taskId) {
    return m_engine.takeForDecision(taskId, "volunteers gave up on it: the node computes it");
}

void JobBook::requeue(std::int64_t taskId, std::string_view why) {
    m_engine.requeue(taskId, QueuePlace::Front, why);
}

void JobBook::refuse(std::int64_t taskId, const std::string& volunteerId) {
    if (TileTask* found = task(taskId))
        found->refusedBy.insert(volunteerId);
}

bool JobBook::accept(std::int64_t taskId) {
    const Task* found = m_engine.task(taskId);
    assert(found && found->state == TaskState::Deciding && "a verified task is accepted once");
    m_engine.decide(taskId, "its result was accepted");
    return m_engine.decidedCount(found->job) == m_engine.taskCount(found->job);
}

} // namespace goblin::labnode
