#include "kinds/graph/graph_book.hpp"

#include <boost/json.hpp>

#include "goblin/core/precise_json.hpp"
#include "kinds/graph/graph_blobs.hpp"

namespace goblin::labnode {

namespace json = boost::json;

namespace {

Expected<std::vector<core::Tensor>> storedOutputs(const BlobStore& blobs, const std::string& text) {
    json::error_code ec;
    json::value stored = json::parse(text, ec);
    if (ec || !stored.is_array())
        return makeError(ErrorCode::Internal, "bad outputs");
    return loadTensors(blobs, stored.get_array());
}

} // namespace

int opinionsWanted(const GraphJob& job) {
    return job.submission.verification == GraphVerification::Freivalds ? 1 : 2;
}

GraphJob& GraphBook::add(GraphJob job, const std::vector<GraphTaskRow>& tasks,
                         const BlobStore& blobs) {
    for (const GraphChunk& chunk : job.chunks) {
        json::error_code ec; // the graph's doubles keep their exact bits
        job.chunkGraphs.push_back(core::parsePrecise(chunk.json, ec));
    }
    for (const GraphTaskRow& row : tasks) {
        GraphTask task;
        task.id = row.id;
        task.jobId = job.id;
        task.chunk = static_cast<std::size_t>(row.chunk);
        task.lastAttempt = row.lastAttempt; // attempt numbers never repeat
        job.taskIds.push_back(row.id);
        if (row.accepted) {
            if (auto outputs = storedOutputs(blobs, row.outputs)) {
                task.decided = true;
                task.outputs = std::move(*outputs);
                ++job.done;
            }
        }
        if (!task.decided) // two volunteer opinions, or one the node checks itself
            for (int i = 0; i < opinionsWanted(job); ++i)
                m_queue.push_back(task.id);
        m_tasks.insert_or_assign(task.id, std::move(task));
    }
    return m_jobs.insert_or_assign(job.id, std::move(job)).first->second;
}

void GraphBook::remove(const std::string& jobId) {
    auto it = m_jobs.find(jobId);
    if (it == m_jobs.end())
        return;
    for (std::int64_t taskId : it->second.taskIds) {
        dropQueued(taskId);
        m_tasks.erase(taskId);
    }
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
    std::vector<std::int64_t> ids;
    ids.reserve(m_tasks.size());
    for (const auto& [id, task] : m_tasks)
        ids.push_back(id);
    return ids;
}

void GraphBook::dropQueued(std::int64_t taskId) {
    std::erase(m_queue, taskId);
}

bool GraphBook::fits(const GraphTask& task, const VolunteerInfo& volunteer) const {
    const GraphJob& job = m_jobs.at(task.jobId);
    return volunteer.memoryBytes <= 0 || task.chunk >= job.chunks.size() ||
           job.chunks[task.chunk].peakBytes <= volunteer.memoryBytes;
}

GraphTask* GraphBook::takeFor(const VolunteerInfo& volunteer,
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
    auto pick = m_queue.end();
    for (int pass = 0; pass < 3 && pick == m_queue.end(); ++pass) {
        for (auto it = m_queue.begin(); it != m_queue.end(); ++it) {
            const GraphTask& task = m_tasks.at(*it);
            if (task.involved.contains(volunteer.volunteerId) || !fits(task, volunteer) ||
                !mayTake(task.id))
                continue;
            if (pass < 2 && seenAddress(task))
                continue;
            if (pass == 0 && seenBackend(task))
                continue;
            pick = it;
            break;
        }
    }
    if (pick == m_queue.end())
        return nullptr;
    GraphTask& task = m_tasks.at(*pick);
    m_queue.erase(pick);
    return &task;
}

} // namespace goblin::labnode
