#include "kinds/graph/graph_book.hpp"

#include <algorithm>

#include <boost/json.hpp>

#include "goblin/core/precise_json.hpp"
#include "kinds/graph/graph_blobs.hpp"

namespace goblin::labnode {
namespace {

// A copy of the keys: callers may change the map while they walk them.
template <class Map> std::vector<typename Map::key_type> keysOf(const Map& map) {
    std::vector<typename Map::key_type> keys;
    keys.reserve(map.size());
    for (const auto& entry : map)
        keys.push_back(entry.first);
    return keys;
}

} // namespace

namespace json = boost::json;

int opinionsWanted(const GraphJob& job) {
    return job.submission.verification == GraphVerification::Freivalds ? 1 : 2;
}

GraphJob& GraphBook::add(GraphJob job, const std::vector<GraphTaskRow>& tasks,
                         const BlobStore& blobs) {
    for (const GraphChunk& chunk : job.chunks) {
        json::error_code ec; // the graph's doubles keep their exact bits
        job.chunkGraphs.push_back(core::parsePrecise(chunk.json, ec));
    }
    std::vector<std::int64_t> idOfChunk(job.chunks.size(), 0);
    for (const GraphTaskRow& row : tasks)
        if (row.chunk >= 0 && static_cast<std::size_t>(row.chunk) < idOfChunk.size())
            idOfChunk[static_cast<std::size_t>(row.chunk)] = row.id;
    for (const GraphTaskRow& row : tasks) {
        GraphTask task;
        task.id = row.id;
        task.jobId = job.id;
        task.chunk = static_cast<std::size_t>(row.chunk);
        job.taskIds.push_back(row.id);
        Reloaded reloaded = Reloaded::Undecided;
        if (row.accepted) {
            if (auto outputs = loadTensors(blobs, row.outputs)) {
                reloaded = Reloaded::Decided;
                task.outputs = std::move(*outputs);
                ++job.done;
            }
        }
        std::vector<std::int64_t> dependencies;
        if (task.chunk < job.chunks.size())
            for (std::size_t chunk : job.chunks[task.chunk].dependsOn)
                dependencies.push_back(idOfChunk.at(chunk));
        // Two volunteer opinions, or one the node checks itself; attempt numbers never repeat.
        m_engine.add(TaskSpec{.id = row.id,
                              .job = job.id,
                              .type = std::string(kTaskType),
                              .dependencies = std::move(dependencies),
                              .attempt = row.lastAttempt,
                              .opinions = opinionsWanted(job)},
                     reloaded == Reloaded::Decided ? "reloaded, accepted before" : "planned",
                     reloaded);
        m_tasks.insert_or_assign(task.id, std::move(task));
    }
    job.mergeTask = m_engine.nodeTaskId();
    m_engine.add(TaskSpec{.id = job.mergeTask,
                          .job = job.id,
                          .type = std::string(kMergeType),
                          .dependencies = job.taskIds,
                          .attempt = 0,
                          .opinions = 1},
                 "planned: the node merges the job's tasks once they are decided");
    return m_jobs.insert_or_assign(job.id, std::move(job)).first->second;
}

void GraphBook::remove(const std::string& jobId) {
    auto it = m_jobs.find(jobId);
    if (it == m_jobs.end())
        return;
    for (std::int64_t taskId : it->second.taskIds)
        m_tasks.erase(taskId);
    m_engine.removeJob(jobId);
    m_jobs.erase(it);
}

GraphJob* GraphBook::job(const std::string& jobId) {
    auto it = m_jobs.find(jobId);
    return it == m_jobs.end() ? nullptr : &it->second;
}

GraphTask* GraphBook::task(std::int64_t taskId) {
    auto it = m_tasks.find(taskId);
    return it == m_tasks.end() ? nullptr : &it->second;
}

std::vector<std::int64_t> GraphBook::taskIds() const {
    return keysOf(m_tasks);
}

std::vector<std::string> GraphBook::jobIds() const {
    return keysOf(m_jobs);
}

bool GraphBook::settled(const GraphTask& task) const {
    const TaskState now = state(task);
    return now == TaskState::Deciding || now == TaskState::Decided || now == TaskState::Cancelled;
}

void GraphBook::wantOpinion(const GraphTask& task, std::string_view why) {
    m_engine.want(task.id, QueuePlace::Back, why);
}

void GraphBook::stopWanting(const GraphTask& task, std::string_view why) {
    m_engine.stopWanting(task.id, why);
}

void GraphBook::startDeciding(const GraphTask& task, std::string_view why) {
    m_engine.takeForDecision(task.id, why);
}

void GraphBook::callOff(const GraphTask& task, std::string_view why) {
    m_engine.callOff(task.id, why);
}

void GraphBook::markDecided(const GraphTask& task) {
    if (state(task) == TaskState::Deciding)
        m_engine.decide(task.id, "its outputs and verdicts are recorded");
}

std::vector<std::int64_t> GraphBook::redoDependents(const GraphTask& task, std::string_view why) {
    return m_engine.redoDependents(task.id, why);
}

std::vector<std::int64_t> GraphBook::readersOf(const GraphTask& task) const {
    std::vector<std::int64_t> readers;
    if (const Task* decided = m_engine.task(task.id))
        for (std::int64_t dependent : decided->dependents)
            if (m_tasks.contains(dependent)) // not the job's merge
                readers.push_back(dependent);
    return readers;
}

std::vector<std::int64_t> GraphBook::dependentsOf(const GraphTask& task) const {
    std::vector<std::int64_t> found;
    std::vector<std::int64_t> frontier{task.id};
    while (!frontier.empty()) {
        const Task* from = m_engine.task(frontier.back());
        frontier.pop_back();
        if (!from)
            continue;
        for (std::int64_t dependent : from->dependents)
            if (m_tasks.contains(dependent) && // not the job's merge
                std::find(found.begin(), found.end(), dependent) == found.end()) {
                found.push_back(dependent);
                frontier.push_back(dependent);
            }
    }
    return found;
}

Expected<void> GraphBook::fillInputs(const GraphTask& task) {
    GraphJob& job = m_jobs.at(task.jobId);
    return fillBoundaryInputs(job.chunks.at(task.chunk),
                              [&](std::size_t chunk) -> const std::vector<core::Tensor>* {
                                  const GraphTask* from = this->task(job.taskIds.at(chunk));
                                  return from && decided(*from) ? &from->outputs : nullptr;
                              });
}

void GraphBook::endJob(const std::string& jobId, std::string_view why) {
    m_engine.cancelJob(jobId, why);
}

bool GraphBook::takeMerge(const GraphJob& job, std::string_view why) {
    return m_engine.state(job.mergeTask) == TaskState::Queued &&
           m_engine.takeForDecision(job.mergeTask, why);
}

bool GraphBook::merging(const GraphJob& job) const {
    return m_engine.state(job.mergeTask) == TaskState::Deciding;
}

void GraphBook::callOffMerge(const GraphJob& job, std::string_view why) {
    if (merging(job))
        m_engine.requeue(job.mergeTask, QueuePlace::Front, why);
}

void GraphBook::mergeDecided(const GraphJob& job) {
    if (merging(job))
        m_engine.decide(job.mergeTask, "merged: the job's result");
}

bool GraphBook::fits(const GraphTask& task, const VolunteerInfo& volunteer,
                     const VolunteerLoad& held) const {
    VolunteerLoad load = held;
    load += loadOf(task);
    return volunteer.memoryBytes <= 0 || load.bytes() <= volunteer.memoryBytes;
}

VolunteerLoad GraphBook::loadOf(const GraphTask& task) const {
    const auto job = m_jobs.find(task.jobId);
    if (job == m_jobs.end() || task.chunk >= job->second.chunks.size())
        return {};
    const GraphChunk& chunk = job->second.chunks[task.chunk];
    return VolunteerLoad{chunk.givenBytes,
                         std::max<std::int64_t>(chunk.peakBytes - chunk.givenBytes, 0)};
}

std::optional<LeasedTask>
GraphBook::leaseFor(const VolunteerInfo& volunteer, const VolunteerLoad& held,
                    const LeasedOnBackend& leasedOnBackend,
                    const std::function<bool(std::int64_t task)>& mayTake) {
    // Replicas on different backends catch backend bugs as well as dishonesty.
    auto seenBackend = [&](const GraphTask& task) {
        for (const auto& replica : task.replicas)
            if (replica.backend == volunteer.backend)
                return true;
        return leasedOnBackend(task.id, volunteer.backend);
    };
    // Two replicas from one address may be one person: other addresses first (more audits where
    // there are none, trust_book.hpp).
    auto seenAddress = [&](const GraphTask& task) {
        return task.addresses.contains(volunteer.address);
    };
    for (int pass = 0; pass < 3; ++pass) {
        auto leased = m_engine.lease(
            [&](const Task& candidate) {
                if (candidate.type != kTaskType) // the node's merge
                    return false;
                const GraphTask& task = m_tasks.at(candidate.id);
                if (task.involved.contains(volunteer.volunteerId) || !fits(task, volunteer, held) ||
                    !mayTake(task.id))
                    return false;
                if (pass < 2 && seenAddress(task))
                    return false;
                return pass != 0 || !seenBackend(task);
            },
            "an opinion leased to a volunteer");
        if (leased)
            return leased;
    }
    return std::nullopt;
}

} // namespace goblin::labnode
