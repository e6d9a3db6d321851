#include "graph_jobs.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include "goblin/compute/reference/graph_executor.hpp"
#include "goblin/core/precise_json.hpp"
#include "goblin/net/json_fields.hpp"
#include "graph_blobs.hpp"
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

GraphJobs::GraphJobs(asio::io_context& core, asio::thread_pool& workers, NodeStore& store,
                     const BlobStore& blobs, GraphJobSettings settings, Hooks hooks)
    : m_core(core), m_workers(workers), m_store(store), m_db(store.database()), m_blobs(blobs),
      m_settings(std::move(settings)),
      m_hooks(std::move(hooks)),
      m_random(m_settings.seed != 0 ? m_settings.seed : std::random_device{}()) {}

void GraphJobs::start() {
    for (const GraphJobRow& row : unreleasedGraphJobs(m_db)) {
        if (auto resumed = resumeJob(row); !resumed) {
            m_hooks.log("graph job " + row.id + " cannot resume (" + resumed.error().message +
                        "); marked failed");
            (void)setGraphJobState(m_db, row.id, "failed", m_hooks.clock());
        }
    }
}

Expected<void> GraphJobs::resumeJob(const GraphJobRow& row) {
    // The same checks and the same split as at submission: chunks are a pure function of the
    // request, its inputs and the number of tasks recorded.
    json::error_code requestError, inputsError;
    json::value request = core::parsePrecise(row.request, requestError);
    json::value stored = json::parse(row.inputs, inputsError);
    if (requestError || inputsError || !request.is_object() || !stored.is_array())
        return makeError(ErrorCode::Internal, "its stored request is malformed");
    auto inputs = loadTensors(m_blobs, stored.get_array());
    if (!inputs)
        return tl::unexpected(inputs.error());
    Message message{request.get_object(), {}};
    for (core::Tensor& input : *inputs)
        message.tensors.push_back(std::make_shared<const core::Tensor>(std::move(input)));
    auto submission = parseGraphSubmission(message, m_settings.limits);
    if (!submission)
        return tl::unexpected(submission.error());
    auto chunks = splitIntoChunks(*submission, row.tasks, m_settings.limits);
    if (!chunks)
        return tl::unexpected(chunks.error());
    const auto tasks = graphTasksOf(m_db, row.id);
    if (tasks.size() != chunks->size())
        return makeError(ErrorCode::Internal, "its tasks do not match its chunks");
    Job job;
    job.id = row.id;
    job.researcher = row.researcherId;
    job.createdAt = row.createdAt;
    job.inputDigests = storedDigests(stored.get_array());
    job.submission = std::move(*submission);
    job.chunks = std::move(*chunks);
    Job& added = addJob(std::move(job), tasks);
    m_hooks.log("graph job " + added.id + " resumed: " + std::to_string(added.done) + " of " +
                std::to_string(added.taskIds.size()) + " task(s) already decided");
    if (added.done == static_cast<std::int64_t>(added.taskIds.size()))
        finishJob(added);
    return {};
}

GraphJobs::Job& GraphJobs::addJob(Job job, const std::vector<GraphTaskRow>& tasks) {
    for (const GraphChunk& chunk : job.chunks) {
        json::error_code ec; // the graph's doubles keep their exact bits
        job.chunkGraphs.push_back(core::parsePrecise(chunk.json, ec));
    }
    for (const GraphTaskRow& row : tasks) {
        Task task;
        task.id = row.id;
        task.jobId = job.id;
        task.chunk = static_cast<std::size_t>(row.chunk);
        task.lastAttempt = row.lastAttempt; // attempt numbers never repeat
        job.taskIds.push_back(row.id);
        if (row.accepted) {
            json::error_code ec;
            json::value stored = json::parse(row.outputs, ec);
            auto outputs = ec || !stored.is_array() ? Expected<std::vector<core::Tensor>>(
                                                          makeError(ErrorCode::Internal, "bad outputs"))
                                                    : loadTensors(m_blobs, stored.get_array());
            if (outputs) {
                task.decided = true;
                task.outputs = std::move(*outputs);
                ++job.done;
            }
        }
        const bool queue = !task.decided;
        auto [it, inserted] = m_tasks.emplace(task.id, std::move(task));
        if (queue) { // two volunteer opinions
            m_queue.push_back(it->first);
            m_queue.push_back(it->first);
        }
    }
    auto [it, inserted] = m_jobs.emplace(job.id, std::move(job));
    return it->second;
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
    // Decoding, validating, slicing and storing the inputs are O(size): a worker does them.
    const auto volunteers = static_cast<std::int64_t>(m_hooks.volunteers().size());
    asio::post(m_workers, [this, peer, researcher, requestId, volunteers,
                           message = std::move(message)] {
        auto intake = [&]() -> Expected<Intake> {
            auto submission = parseGraphSubmission(message, m_settings.limits);
            if (!submission)
                return tl::unexpected(submission.error());
            auto chunks = splitIntoChunks(*submission, std::max<std::int64_t>(1, volunteers),
                                          m_settings.limits);
            if (!chunks)
                return tl::unexpected(chunks.error());
            for (const GraphChunk& chunk : *chunks)
                if (chunk.peakBytes > m_settings.maxTaskBytes)
                    return makeError(ErrorCode::LimitExceeded,
                                     "a task of this graph holds " +
                                         std::to_string(chunk.peakBytes >> 20) +
                                         " MiB of values at once; this node allows " +
                                         std::to_string(m_settings.maxTaskBytes >> 20) +
                                         " MiB (split it along a batch dim into more chunks)");
            auto stored = storeTensors(m_blobs, valuesOf(submission->inputs));
            if (!stored)
                return makeError(ErrorCode::Internal, "storing the inputs: " + stored.error().message);
            json::object request{{"graph", message.control.at("graph")}};
            if (const auto* batch = message.control.if_contains("batch"))
                request["batch"] = *batch;
            return Intake{std::move(*submission), std::move(*chunks), json::serialize(request),
                          json::serialize(*stored)};
        }();
        asio::post(m_core, [this, peer, researcher, requestId, intake = std::move(intake)]() mutable {
            if (!intake)
                return replyError(peer, requestId, intake.error());
            createJob(peer, researcher, requestId, std::move(*intake));
        });
    });
}

void GraphJobs::createJob(std::uint64_t peer, std::int64_t researcher, std::int64_t requestId,
                          Intake intake) {
    GraphJobRow row{randomId("g-", m_random), researcher, "running",
                    static_cast<std::int64_t>(intake.chunks.size()), std::move(intake.request),
                    std::move(intake.inputs), m_hooks.clock()};
    std::vector<GraphTaskRow> tasks;
    {
        Transaction transaction(m_db);
        auto ok = insertGraphJob(m_db, row);
        for (std::size_t c = 0; ok && c < intake.chunks.size(); ++c) {
            auto taskId = insertGraphTask(m_db, row.id, static_cast<std::int64_t>(c));
            if (!taskId) {
                ok = tl::unexpected(taskId.error());
                break;
            }
            tasks.push_back(GraphTaskRow{*taskId, static_cast<std::int64_t>(c), false, {}, 0});
        }
        if (ok)
            ok = transaction.commit();
        if (!ok)
            return replyError(peer, requestId, Error{ErrorCode::Internal, ok.error().message});
    }
    Job job;
    job.id = row.id;
    job.researcher = researcher;
    job.createdAt = row.createdAt;
    json::error_code ec;
    job.inputDigests = storedDigests(json::parse(row.inputs, ec).as_array());
    job.submission = std::move(intake.submission);
    job.chunks = std::move(intake.chunks);
    job.watchers.insert(peer);
    Job& added = addJob(std::move(job), tasks);
    m_hooks.log("graph job " + added.id + " accepted: " +
                std::to_string(added.submission.graph.nodes.size()) + " node(s), " +
                std::to_string(added.taskIds.size()) + " task(s), each computed twice");
    m_hooks.send(peer, Message{json::object{{"type", "job_accepted"},
                                            {"id", requestId},
                                            {"job", added.id},
                                            {"kind", "graph"},
                                            {"tasks", static_cast<std::int64_t>(added.taskIds.size())}},
                               {}});
    m_hooks.wake();
}

GraphJobs::Job* GraphJobs::ownedJob(std::uint64_t peer, std::int64_t researcher,
                                    std::int64_t requestId, const std::string& jobId) {
    auto it = m_jobs.find(jobId);
    if (it != m_jobs.end() && it->second.researcher == researcher)
        return &it->second;
    // A failed or released job, or another researcher's: say only what this researcher may know.
    const auto row = graphJob(m_db, jobId);
    if (row && row->researcherId == researcher && row->state == "failed")
        replyError(peer, requestId, Error{ErrorCode::Internal, "graph job " + jobId + " failed"});
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
    if (auto ok = setGraphJobState(m_db, jobId, "released", m_hooks.clock()); !ok)
        return replyError(peer, requestId, ok.error());
    std::vector<std::string> digests = job->inputDigests;
    for (const GraphTaskRow& task : graphTasksOf(m_db, jobId)) {
        json::error_code ec;
        if (json::value stored = json::parse(task.outputs, ec); !ec && stored.is_array())
            for (std::string& digest : storedDigests(stored.get_array()))
                digests.push_back(std::move(digest));
    }
    for (const std::string& digest : digests)
        if (!m_store.blobInUse(digest, jobId))
            m_blobs.remove(digest);
    for (std::int64_t taskId : job->taskIds)
        m_tasks.erase(taskId);
    m_jobs.erase(jobId);
    m_hooks.log("graph job " + jobId + " released: its blobs are deleted");
    m_hooks.send(peer, Message{json::object{{"type", "released"}, {"id", requestId}, {"job", jobId}}, {}});
}

int GraphJobs::leasesOf(std::uint64_t peer) const {
    int count = 0;
    for (const auto& [id, task] : m_tasks)
        for (const auto& [attempt, lease] : task.leases)
            count += lease.peer == peer ? 1 : 0;
    return count;
}

bool GraphJobs::fits(const Task& task, const GraphVolunteer& volunteer) const {
    const Job& job = m_jobs.at(task.jobId);
    return volunteer.memoryBytes <= 0 || task.chunk >= job.chunks.size() ||
           job.chunks[task.chunk].peakBytes <= volunteer.memoryBytes;
}

std::optional<Message> GraphJobs::leaseFor(const GraphVolunteer& volunteer) {
    // Prefer a task none of whose opinions came from this backend: replicas on different
    // backends catch backend bugs as well as dishonesty.
    auto pick = m_queue.end();
    for (int pass = 0; pass < 2 && pick == m_queue.end(); ++pass) {
        for (auto it = m_queue.begin(); it != m_queue.end(); ++it) {
            const Task& task = m_tasks.at(*it);
            if (task.involved.contains(volunteer.volunteerId) || !fits(task, volunteer))
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
        if (!task.involved.contains(volunteer.volunteerId) && fits(task, volunteer)) {
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
        return computeOnNode(task);
    case Decision::Decided:
        break;
    }
    const bool nodeDecided = task.replicas[judgement.decisive].fromNode();
    std::bernoulli_distribution sample(std::clamp(m_settings.sampleRate, 0.0, 1.0));
    if (!nodeDecided && !task.sampled && sample(m_random)) {
        task.sampled = true;
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
    const std::vector<core::Tensor>& outputs = task.replicas[judgement.decisive].outputs;
    // The outputs reach the disk before the verdicts commit: a restarted node finds them.
    auto stored = storeTensors(m_blobs, outputs);
    if (!stored)
        return failJob(job, Error{ErrorCode::Internal, "storing outputs: " + stored.error().message});
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
        ok = setGraphTaskAccepted(m_db, task.id, json::serialize(*stored));
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
    task.outputs = outputs;
    for (std::size_t i = 0; i < task.replicas.size(); ++i) {
        const Replica& replica = task.replicas[i];
        if (replica.fromNode())
            continue;
        const ReplicaVerdict& verdict = judgement.verdicts[i];
        if (!verdict.accepted)
            m_hooks.log("graph task " + std::to_string(task.id) + " attempt " +
                        std::to_string(replica.attempt) + " from volunteer " + replica.volunteerId +
                        " REJECTED (" + method + "): " + verdict.reason);
        m_hooks.send(task.replicaPeers[i], Message{json::object{{"type", "verdict"},
                                                                {"task", task.id},
                                                                {"attempt", replica.attempt},
                                                                {"verdict", verdict.accepted ? "accepted" : "rejected"}},
                                                   {}});
    }
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
    const GraphSummaryCounts counts = graphSummaryCounts(m_db, job.id);
    m_hooks.log("graph job " + job.id + " done: " + std::to_string(counts.accepted) +
                " replica(s) accepted, " + std::to_string(counts.rejected) + " rejected, " +
                std::to_string(counts.sampled) + " task(s) recomputed by the node (" +
                std::to_string(counts.caught) + " caught)");
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
    const GraphSummaryCounts counts = graphSummaryCounts(m_db, job.id);
    json::object backends;
    for (const auto& [name, count] : counts.backends)
        backends[name] = count;
    json::object summary{{"kind", "graph"},
                         {"tasks", static_cast<std::int64_t>(job.taskIds.size())},
                         {"verdicts", json::object{{"accepted", counts.accepted}, {"rejected", counts.rejected}}},
                         {"node_recomputed", counts.sampled},
                         {"node_caught", counts.caught},
                         {"node_tiebreaks", counts.tiebreaks},
                         {"volunteers", counts.volunteers},
                         {"backends", std::move(backends)},
                         {"max_disagreement_ratio", counts.worstRatio},
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
