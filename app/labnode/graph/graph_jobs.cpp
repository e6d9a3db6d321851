#include "graph_jobs.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include "goblin/compute/reference/graph_executor.hpp"
#include "goblin/net/json_fields.hpp"
#include "graph_store.hpp"
#include "secrets.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;
namespace json = boost::json;
using net::Message;

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<core::Tensor> valuesOf(const std::vector<net::TensorPtr>& tensors) {
    std::vector<core::Tensor> values;
    for (const auto& tensor : tensors)
        values.push_back(*tensor); // shares the storage
    return values;
}

// Cheap gates before any comparison: a replica with the wrong count, dtype or shape is wrong.
std::optional<std::string> malformed(const GraphChunk& chunk, const std::vector<net::TensorPtr>& outputs) {
    if (outputs.size() != chunk.tolerances.size())
        return "expected " + std::to_string(chunk.tolerances.size()) + " output(s), got " +
               std::to_string(outputs.size());
    for (std::size_t o = 0; o < outputs.size(); ++o) {
        const auto& spec = chunk.tolerances[o].spec;
        if (outputs[o]->dtype() != spec.dtype)
            return "output " + std::to_string(o) + " is " +
                   std::string(core::wireName(outputs[o]->dtype())) + ", expected " +
                   std::string(core::wireName(spec.dtype));
        if (outputs[o]->shape() != spec.shape)
            return "output " + std::to_string(o) + " has the wrong shape";
    }
    return std::nullopt;
}

} // namespace

GraphJobs::GraphJobs(asio::io_context& core, asio::thread_pool& workers, Database& db,
                     GraphJobSettings settings, Hooks hooks)
    : m_core(core), m_workers(workers), m_db(db), m_settings(std::move(settings)),
      m_hooks(std::move(hooks)),
      m_random(m_settings.seed != 0 ? m_settings.seed : std::random_device{}()) {}

void GraphJobs::start() {
    if (const auto failed = failInterruptedGraphJobs(m_db, m_hooks.clock()); failed > 0)
        m_hooks.log(std::to_string(failed) + " graph job(s) of a previous run marked failed "
                                             "(graph jobs do not survive a restart)");
}

void GraphJobs::replyError(std::uint64_t peer, std::int64_t requestId, const Error& error) {
    m_hooks.send(peer, Message{json::object{{"type", "error"},
                                            {"id", requestId},
                                            {"code", std::string(wireName(error.code))},
                                            {"message", error.message}},
                               {}});
}

void GraphJobs::submit(std::uint64_t peer, std::int64_t researcher, std::int64_t requestId,
                       Message message) {
    // Decoding, validating and slicing are O(size): a worker does them.
    const auto volunteers = static_cast<std::int64_t>(m_hooks.volunteers().size());
    asio::post(m_workers, [this, peer, researcher, requestId, volunteers,
                           message = std::move(message)] {
        auto submission = parseGraphSubmission(message, m_settings.limits);
        Expected<std::vector<GraphChunk>> chunks = tl::unexpected(Error{});
        if (submission)
            chunks = splitIntoChunks(*submission, std::max<std::int64_t>(1, volunteers),
                                     m_settings.limits);
        asio::post(m_core, [this, peer, researcher, requestId, submission = std::move(submission),
                            chunks = std::move(chunks)]() mutable {
            if (!submission)
                return replyError(peer, requestId, submission.error());
            if (!chunks)
                return replyError(peer, requestId, chunks.error());
            createJob(peer, researcher, requestId, std::move(*submission), std::move(*chunks));
        });
    });
}

void GraphJobs::createJob(std::uint64_t peer, std::int64_t researcher, std::int64_t requestId,
                          GraphSubmission submission, std::vector<GraphChunk> chunks) {
    Job job;
    job.id = randomId("g-", m_random);
    job.researcher = researcher;
    job.createdAt = m_hooks.clock();
    {
        Transaction transaction(m_db);
        auto ok = insertGraphJob(m_db, job.id, researcher, static_cast<std::int64_t>(chunks.size()),
                                 job.createdAt);
        for (std::size_t c = 0; ok && c < chunks.size(); ++c) {
            auto taskId = insertGraphTask(m_db, job.id, static_cast<std::int64_t>(c));
            if (!taskId) {
                ok = tl::unexpected(taskId.error());
                break;
            }
            job.taskIds.push_back(*taskId);
        }
        if (ok)
            ok = transaction.commit();
        if (!ok)
            return replyError(peer, requestId, Error{ErrorCode::Internal, ok.error().message});
    }
    for (const GraphChunk& chunk : chunks)
        job.chunkGraphs.push_back(json::parse(chunk.json));
    job.submission = std::move(submission);
    job.chunks = std::move(chunks);
    job.watchers.insert(peer);
    for (std::size_t c = 0; c < job.taskIds.size(); ++c) {
        Task task;
        task.id = job.taskIds[c];
        task.jobId = job.id;
        task.chunk = c;
        auto [it, inserted] = m_tasks.emplace(task.id, std::move(task));
        // Two volunteer opinions per task from the start.
        m_queue.push_back(it->first);
        m_queue.push_back(it->first);
    }
    m_hooks.log("graph job " + job.id + " accepted: " + std::to_string(job.submission.graph.nodes.size()) +
                " node(s), " + std::to_string(job.taskIds.size()) + " task(s), each computed twice");
    m_hooks.send(peer, Message{json::object{{"type", "job_accepted"},
                                            {"id", requestId},
                                            {"job", job.id},
                                            {"kind", "graph"},
                                            {"tasks", static_cast<std::int64_t>(job.taskIds.size())}},
                               {}});
    m_jobs.emplace(job.id, std::move(job));
    m_hooks.wake();
}

GraphJobs::Job* GraphJobs::ownedJob(std::uint64_t peer, std::int64_t researcher,
                                    std::int64_t requestId, const std::string& jobId) {
    auto it = m_jobs.find(jobId);
    if (it != m_jobs.end() && it->second.researcher == researcher)
        return &it->second;
    // A job of an earlier run (failed at start-up) or another researcher's: say what is known.
    const auto row = graphJob(m_db, jobId);
    if (row && row->researcherId == researcher && row->state == "failed")
        replyError(peer, requestId,
                   Error{ErrorCode::Internal, "graph job " + jobId +
                                                  " was interrupted by a lab node restart; submit it again"});
    else
        replyError(peer, requestId, Error{ErrorCode::NotFound, "no job " + jobId});
    return nullptr;
}

void GraphJobs::fetch(std::uint64_t peer, std::int64_t researcher, std::int64_t requestId,
                      const std::string& jobId) {
    Job* job = ownedJob(peer, researcher, requestId, jobId);
    if (!job)
        return;
    m_hooks.send(peer, Message{json::object{{"type", "job_status"},
                                            {"id", requestId},
                                            {"job", jobId},
                                            {"state", job->state},
                                            {"done", job->done},
                                            {"total", static_cast<std::int64_t>(job->taskIds.size())}},
                               {}});
    if (job->state == "running")
        job->watchers.insert(peer);
    else if (job->state == "done")
        deliver(peer, *job, requestId);
}

void GraphJobs::release(std::uint64_t peer, std::int64_t researcher, std::int64_t requestId,
                        const std::string& jobId) {
    Job* job = ownedJob(peer, researcher, requestId, jobId);
    if (!job)
        return;
    if (job->state == "running")
        return replyError(peer, requestId,
                          Error{ErrorCode::InvalidInput, "job " + jobId + " is still running"});
    (void)setGraphJobState(m_db, jobId, "released", m_hooks.clock());
    for (std::int64_t taskId : job->taskIds)
        m_tasks.erase(taskId);
    m_jobs.erase(jobId);
    m_hooks.log("graph job " + jobId + " released");
    m_hooks.send(peer, Message{json::object{{"type", "released"}, {"id", requestId}, {"job", jobId}}, {}});
}

int GraphJobs::leasesOf(std::uint64_t peer) const {
    int count = 0;
    for (const auto& [id, task] : m_tasks)
        for (const auto& [attempt, lease] : task.leases)
            count += lease.peer == peer ? 1 : 0;
    return count;
}

std::optional<Message> GraphJobs::leaseFor(const GraphVolunteer& volunteer) {
    // Prefer a task none of whose opinions came from this backend: replicas on different
    // backends catch backend bugs as well as dishonesty.
    auto pick = m_queue.end();
    for (int pass = 0; pass < 2 && pick == m_queue.end(); ++pass) {
        for (auto it = m_queue.begin(); it != m_queue.end(); ++it) {
            const Task& task = m_tasks.at(*it);
            if (task.involved.contains(volunteer.volunteerId))
                continue;
            bool sameBackend = false;
            for (const auto& replica : task.replicas)
                sameBackend = sameBackend || replica.backend == volunteer.backend;
            for (const auto& [attempt, lease] : task.leases)
                sameBackend = sameBackend || lease.backend == volunteer.backend;
            if (pass == 0 && sameBackend)
                continue;
            pick = it;
            break;
        }
    }
    if (pick == m_queue.end())
        return std::nullopt;
    Task& task = m_tasks.at(*pick);
    m_queue.erase(pick);
    const Job& job = m_jobs.at(task.jobId);
    const std::int64_t attempt = ++task.lastAttempt;
    task.leases[attempt] = Lease{volunteer.peer, volunteer.volunteerId, volunteer.backend,
                                 m_hooks.clock() + m_settings.leaseSeconds};
    task.involved.insert(volunteer.volunteerId);
    const GraphChunk& chunk = job.chunks[task.chunk];
    // Only the computation: no job name, researcher or description reaches a volunteer.
    return Message{json::object{{"type", "task"},
                                {"op", "graph"},
                                {"task", task.id},
                                {"attempt", attempt},
                                {"graph", job.chunkGraphs[task.chunk]},
                                {"tensors", static_cast<std::int64_t>(chunk.inputs.size())}},
                   chunk.inputs};
}

void GraphJobs::queueOpinion(Task& task) {
    // Ask a volunteer that has not seen this task yet; with none connected, the node decides.
    for (const GraphVolunteer& volunteer : m_hooks.volunteers()) {
        if (!task.involved.contains(volunteer.volunteerId)) {
            m_queue.push_back(task.id);
            return m_hooks.wake();
        }
    }
    computeOnNode(task);
}

void GraphJobs::dropLease(Task& task, std::int64_t attempt, const std::string& why) {
    auto lease = task.leases.find(attempt);
    if (lease == task.leases.end())
        return;
    m_hooks.log("graph task " + std::to_string(task.id) + " attempt " + std::to_string(attempt) +
                " (" + lease->second.volunteerId + "): " + why + "; asking another volunteer");
    task.leases.erase(lease);
    if (!task.decided)
        queueOpinion(task);
}

void GraphJobs::onPeerClosed(std::uint64_t peer) {
    for (auto& [id, task] : m_tasks) {
        std::vector<std::int64_t> lost;
        for (const auto& [attempt, lease] : task.leases)
            if (lease.peer == peer)
                lost.push_back(attempt);
        for (std::int64_t attempt : lost) {
            task.involved.erase(task.leases.at(attempt).volunteerId); // it may come back
            dropLease(task, attempt, "volunteer disconnected");
        }
    }
    for (auto& [id, job] : m_jobs)
        job.watchers.erase(peer);
}

void GraphJobs::expireLeases() {
    const double now = m_hooks.clock();
    for (auto& [id, task] : m_tasks) {
        std::vector<std::int64_t> expired;
        for (const auto& [attempt, lease] : task.leases)
            if (lease.deadline <= now)
                expired.push_back(attempt);
        for (std::int64_t attempt : expired)
            dropLease(task, attempt, "lease expired");
    }
}

void GraphJobs::onTaskError(const GraphVolunteer& volunteer, const json::object& report) {
    auto taskId = net::requireInt(report, "task");
    auto attempt = net::requireInt(report, "attempt");
    if (!taskId || !attempt)
        return;
    auto it = m_tasks.find(*taskId);
    if (it == m_tasks.end())
        return;
    auto lease = it->second.leases.find(*attempt);
    if (lease == it->second.leases.end() || lease->second.peer != volunteer.peer)
        return;
    dropLease(it->second, *attempt,
              "could not compute it: " + net::requireString(report, "message").value_or("?"));
    m_hooks.wake();
}

void GraphJobs::onResult(const GraphVolunteer& volunteer, Message message) {
    auto taskId = net::requireInt(message.control, "task");
    auto attempt = net::requireInt(message.control, "attempt");
    auto stale = [&] {
        m_hooks.send(volunteer.peer, Message{json::object{{"type", "verdict"},
                                                          {"task", taskId.value_or(0)},
                                                          {"attempt", attempt.value_or(0)},
                                                          {"verdict", "stale"}},
                                             {}});
        m_hooks.wake();
    };
    if (!taskId || !attempt)
        return stale();
    auto it = m_tasks.find(*taskId);
    if (it == m_tasks.end())
        return stale();
    Task& task = it->second;
    auto lease = task.leases.find(*attempt);
    if (lease == task.leases.end() || lease->second.peer != volunteer.peer || task.decided)
        return stale();
    task.leases.erase(lease);
    Job& job = m_jobs.at(task.jobId);
    const GraphChunk& chunk = job.chunks[task.chunk];
    Replica replica;
    replica.attempt = *attempt;
    replica.volunteerId = volunteer.volunteerId;
    replica.backend = net::requireString(message.control, "backend").value_or(volunteer.backend).substr(0, 64);
    replica.computeSeconds = net::requireNumber(message.control, "compute_seconds").value_or(0.0);
    if (auto wrong = malformed(chunk, message.tensors)) {
        GraphVerdictRecord record{task.id, *attempt, volunteer.volunteerId, replica.backend, false,
                                  "shape-gate", INFINITY, *wrong, replica.computeSeconds};
        (void)recordGraphVerdict(m_db, record, m_hooks.clock());
        ++job.rejected;
        m_hooks.log("graph task " + std::to_string(task.id) + " from " + volunteer.volunteerId +
                    " REJECTED: " + *wrong);
        m_hooks.send(volunteer.peer, Message{json::object{{"type", "verdict"},
                                                          {"task", task.id},
                                                          {"attempt", *attempt},
                                                          {"verdict", "rejected"}},
                                             {}});
        queueOpinion(task);
        return m_hooks.wake();
    }
    replica.outputs = valuesOf(message.tensors);
    task.replicas.push_back(std::move(replica));
    task.replicaPeers.push_back(volunteer.peer);
    judge(task);
    m_hooks.wake();
}

void GraphJobs::judge(Task& task) {
    const bool nodeReplica = std::any_of(task.replicas.begin(), task.replicas.end(),
                                         [](const Replica& replica) { return replica.fromNode(); });
    // Two opinions are needed, unless the node computed it (the node's answer is trusted).
    if (task.judging || task.nodeComputing || task.decided || (task.replicas.size() < 2 && !nodeReplica))
        return;
    task.judging = true;
    const GraphChunk& chunk = m_jobs.at(task.jobId).chunks[task.chunk];
    asio::post(m_workers, [this, taskId = task.id, tolerances = chunk.tolerances,
                           replicas = task.replicas] {
        const auto start = std::chrono::steady_clock::now();
        Judgement judgement = judgeReplicas(tolerances, replicas);
        const double seconds = secondsSince(start);
        asio::post(m_core, [this, taskId, count = replicas.size(), judgement = std::move(judgement),
                            seconds]() mutable { onJudged(taskId, count, std::move(judgement), seconds); });
    });
}

void GraphJobs::onJudged(std::int64_t taskId, std::size_t judgedCount, Judgement judgement,
                         double seconds) {
    auto it = m_tasks.find(taskId);
    if (it == m_tasks.end())
        return; // released meanwhile
    Task& task = it->second;
    task.judging = false;
    m_jobs.at(task.jobId).verifySeconds += seconds;
    if (task.replicas.size() != judgedCount)
        return judge(task); // another replica arrived meanwhile: judge them all
    switch (judgement.decision) {
    case Decision::NeedAnotherVolunteer:
        m_hooks.log("graph task " + std::to_string(task.id) + ": the volunteers disagree; asking for another opinion");
        return queueOpinion(task);
    case Decision::NeedNodeReference:
        m_hooks.log("graph task " + std::to_string(task.id) + ": no two volunteers agree; the node computes it");
        ++m_jobs.at(task.jobId).tiebreaks;
        return computeOnNode(task);
    case Decision::Decided:
        break;
    }
    const bool nodeDecided = task.replicas[judgement.decisive].fromNode();
    std::bernoulli_distribution sample(std::clamp(m_settings.sampleRate, 0.0, 1.0));
    if (!nodeDecided && !task.sampled && sample(m_random)) {
        task.sampled = true;
        ++m_jobs.at(task.jobId).sampled;
        return computeOnNode(task);
    }
    decide(task, judgement);
}

void GraphJobs::computeOnNode(Task& task) {
    if (task.nodeComputing || task.decided)
        return;
    task.nodeComputing = true;
    const GraphChunk& chunk = m_jobs.at(task.jobId).chunks[task.chunk];
    asio::post(m_workers, [this, taskId = task.id, graph = chunk.graph, plan = chunk.plan,
                           inputs = valuesOf(chunk.inputs)] {
        const auto start = std::chrono::steady_clock::now();
        auto outputs = compute::reference::runGraph(graph, plan, inputs);
        const double seconds = secondsSince(start);
        asio::post(m_core, [this, taskId, outputs = std::move(outputs), seconds]() mutable {
            auto it = m_tasks.find(taskId);
            if (it == m_tasks.end())
                return;
            Task& current = it->second;
            current.nodeComputing = false;
            Job& job = m_jobs.at(current.jobId);
            job.verifySeconds += seconds;
            if (!outputs) {
                // The reference refuses the computation itself (integer division by zero …):
                // no volunteer result can be right, and the job cannot finish.
                return failJob(job, outputs.error());
            }
            Replica replica;
            replica.backend = "node-reference";
            replica.computeSeconds = seconds;
            replica.outputs = std::move(*outputs);
            current.replicas.push_back(std::move(replica));
            current.replicaPeers.push_back(0);
            current.leases.clear(); // outstanding opinions are no longer needed
            std::erase(m_queue, taskId);
            judge(current);
        });
    });
}

void GraphJobs::decide(Task& task, const Judgement& judgement) {
    Job& job = m_jobs.at(task.jobId);
    const bool nodeDecided = task.replicas[judgement.decisive].fromNode();
    const std::string method = !nodeDecided ? "replica-agreement"
                               : task.sampled ? "node-sample"
                                              : "node-tiebreak";
    const double now = m_hooks.clock();
    Transaction transaction(m_db);
    Expected<void> ok;
    for (std::size_t i = 0; ok && i < task.replicas.size(); ++i) {
        const Replica& replica = task.replicas[i];
        if (replica.fromNode())
            continue;
        const ReplicaVerdict& verdict = judgement.verdicts[i];
        ok = recordGraphVerdict(m_db,
                                GraphVerdictRecord{task.id, replica.attempt, replica.volunteerId,
                                                   replica.backend, verdict.accepted, method,
                                                   verdict.ratio, verdict.reason, replica.computeSeconds},
                                now);
    }
    if (ok)
        ok = setGraphTaskAccepted(m_db, task.id);
    if (ok)
        ok = transaction.commit();
    if (!ok) {
        m_hooks.log("graph task " + std::to_string(task.id) + ": could not record its verdicts (" +
                    ok.error().message + ")");
        return failJob(job, Error{ErrorCode::Internal, ok.error().message});
    }
    task.decided = true;
    task.leases.clear();
    std::erase(m_queue, task.id);
    task.outputs = task.replicas[judgement.decisive].outputs;
    bool caught = false;
    for (std::size_t i = 0; i < task.replicas.size(); ++i) {
        const Replica& replica = task.replicas[i];
        if (replica.fromNode())
            continue;
        const ReplicaVerdict& verdict = judgement.verdicts[i];
        if (verdict.accepted) {
            ++job.accepted;
            job.volunteers.insert(replica.volunteerId);
            ++job.backends[replica.backend];
            job.worstRatio = std::max(job.worstRatio, verdict.ratio);
        } else {
            ++job.rejected;
            caught = caught || nodeDecided;
            m_hooks.log("graph task " + std::to_string(task.id) + " attempt " +
                        std::to_string(replica.attempt) + " from volunteer " + replica.volunteerId +
                        " REJECTED (" + method + "): " + verdict.reason);
        }
        m_hooks.send(task.replicaPeers[i], Message{json::object{{"type", "verdict"},
                                                                {"task", task.id},
                                                                {"attempt", replica.attempt},
                                                                {"verdict", verdict.accepted ? "accepted" : "rejected"}},
                                                   {}});
    }
    if (nodeDecided && task.sampled && caught)
        ++job.caught;
    if (nodeDecided)
        ++job.backends["node-reference"];
    ++job.done;
    sendProgress(job);
    if (job.done == static_cast<std::int64_t>(job.taskIds.size()))
        finishJob(job);
}

void GraphJobs::sendProgress(const Job& job) {
    for (std::uint64_t peer : job.watchers)
        m_hooks.send(peer, Message{json::object{{"type", "progress"},
                                                {"job", job.id},
                                                {"done", job.done},
                                                {"total", static_cast<std::int64_t>(job.taskIds.size())}},
                                   {}});
}

void GraphJobs::failJob(Job& job, const Error& error) {
    if (job.state != "running")
        return;
    job.state = "failed";
    (void)setGraphJobState(m_db, job.id, "failed", m_hooks.clock());
    m_hooks.log("graph job " + job.id + " failed: " + error.describe());
    for (std::int64_t taskId : job.taskIds) {
        std::erase(m_queue, taskId);
        m_tasks.at(taskId).decided = true;
        m_tasks.at(taskId).leases.clear();
    }
    for (std::uint64_t peer : job.watchers)
        m_hooks.send(peer, Message{json::object{{"type", "job_failed"},
                                                {"job", job.id},
                                                {"code", std::string(wireName(error.code))},
                                                {"message", error.message}},
                                   {}});
    job.watchers.clear();
}

void GraphJobs::finishJob(Job& job) {
    std::vector<std::vector<core::Tensor>> outputs;
    for (std::int64_t taskId : job.taskIds)
        outputs.push_back(m_tasks.at(taskId).outputs);
    auto merged = mergeChunkOutputs(job.submission, job.chunks, outputs);
    if (!merged)
        return failJob(job, merged.error());
    job.result = std::move(*merged);
    job.state = "done";
    (void)setGraphJobState(m_db, job.id, "done", m_hooks.clock());
    m_hooks.log("graph job " + job.id + " done: " + std::to_string(job.accepted) +
                " replica(s) accepted, " + std::to_string(job.rejected) + " rejected, " +
                std::to_string(job.sampled) + " task(s) recomputed by the node (" +
                std::to_string(job.caught) + " caught)");
    for (std::uint64_t peer : job.watchers)
        deliver(peer, job, 0);
    job.watchers.clear();
    // Inputs and per-task outputs are no longer needed; the merged result stays until release.
    for (std::int64_t taskId : job.taskIds) {
        m_tasks.at(taskId).outputs.clear();
        m_tasks.at(taskId).replicas.clear();
    }
    job.chunks.clear();
    job.chunkGraphs.clear();
    job.submission.inputs.clear();
}

void GraphJobs::deliver(std::uint64_t peer, const Job& job, std::int64_t requestId) {
    json::object backends;
    for (const auto& [name, count] : job.backends)
        backends[name] = count;
    json::object summary{{"kind", "graph"},
                         {"tasks", static_cast<std::int64_t>(job.taskIds.size())},
                         {"verdicts", json::object{{"accepted", job.accepted}, {"rejected", job.rejected}}},
                         {"node_recomputed", job.sampled},
                         {"node_caught", job.caught},
                         {"node_tiebreaks", job.tiebreaks},
                         {"volunteers", static_cast<std::int64_t>(job.volunteers.size())},
                         {"backends", std::move(backends)},
                         {"max_disagreement_ratio", job.worstRatio},
                         {"verification_seconds", job.verifySeconds},
                         {"seconds", m_hooks.clock() - job.createdAt}};
    std::vector<net::TensorPtr> tensors;
    for (const core::Tensor& output : job.result)
        tensors.push_back(std::make_shared<const core::Tensor>(output));
    m_hooks.send(peer, Message{json::object{{"type", "job_done"},
                                            {"id", requestId},
                                            {"job", job.id},
                                            {"summary", std::move(summary)},
                                            {"tensors", static_cast<std::int64_t>(tensors.size())}},
                               std::move(tensors)});
}

} // namespace goblin::labnode
