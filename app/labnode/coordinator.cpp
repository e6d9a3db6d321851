#include "coordinator.hpp"

#include <mutex>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include "goblin/net/json_fields.hpp"
#include "job_loader.hpp"
#include "matmul_request.hpp"
#include "secrets.hpp"
#include "task_message.hpp"
#include "tile_planner.hpp"
#include "tile_verifier.hpp"
#include "volunteer_admission.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;
namespace json = boost::json;
using net::Message;
using net::TensorPtr;


Coordinator::Coordinator(asio::io_context& core, asio::thread_pool& workers, NodeStore& store,
                         BlobStore& blobs, CoordinatorSettings settings, Clock clock, LogSink log)
    : m_core(core), m_workers(workers), m_store(store), m_blobs(blobs),
      m_settings(std::move(settings)), m_clock(std::move(clock)), m_log(std::move(log)),
      m_graphs(core, workers, store, blobs,
               GraphJobSettings{{}, m_settings.leaseSeconds, m_settings.graphSampleRate,
                                m_settings.maxGraphTaskBytes, 0},
               graphHooks()),
      m_leaseTimer(core), m_random(std::random_device{}()) {}

GraphJobs::Hooks Coordinator::graphHooks() {
    return GraphJobs::Hooks{[this](std::uint64_t peer, Message message) { send(peer, std::move(message)); },
                            [this] { asio::post(m_core, [this] { pump(); }); },
                            [this] { return graphVolunteers(); }, [this] { return m_clock(); },
                            [this](const std::string& line) { m_log(line); }};
}

GraphVolunteer Coordinator::graphVolunteer(std::uint64_t id, const Peer& entry) const {
    return GraphVolunteer{id, entry.volunteerId, entry.backend, entry.memoryBytes};
}

std::vector<GraphVolunteer> Coordinator::graphVolunteers() const {
    std::vector<GraphVolunteer> volunteers;
    for (const auto& [id, entry] : m_peers)
        if (entry.role == PeerRole::Volunteer && entry.ready && entry.graphs)
            volunteers.push_back(graphVolunteer(id, entry));
    return volunteers;
}

void Coordinator::start() {
    m_graphs.start();
    recoverJobs();
    scheduleLeaseTimer();
}

void Coordinator::stop() {
    m_stopped = true;
    m_leaseTimer.cancel();
    for (auto& [id, entry] : m_peers)
        entry.connection->close(Error{ErrorCode::Internal, "the lab node is shutting down"});
}

Coordinator::Peer* Coordinator::peer(std::uint64_t id) {
    auto it = m_peers.find(id);
    return it == m_peers.end() ? nullptr : &it->second;
}

void Coordinator::send(std::uint64_t id, Message message) {
    if (Peer* target = peer(id))
        target->connection->send(std::move(message));
}

void Coordinator::replyError(std::uint64_t id, std::int64_t requestId, const Error& error) {
    send(id, Message{json::object{{"type", "error"},
                                  {"id", requestId},
                                  {"code", std::string(wireName(error.code))},
                                  {"message", error.message}},
                     {}});
}

void Coordinator::closePeer(std::uint64_t id, const Error& error) {
    if (Peer* target = peer(id))
        target->connection->close(error);
}

void Coordinator::onConnected(std::uint64_t id, std::shared_ptr<net::WsConnection> connection,
                              PeerRole role) {
    Peer entry;
    entry.connection = std::move(connection);
    entry.role = role;
    m_peers.emplace(id, std::move(entry));
}

void Coordinator::onClosed(std::uint64_t id, const Error& reason) {
    Peer* gone = peer(id);
    if (!gone)
        return;
    if (gone->role == PeerRole::Volunteer && gone->ready) {
        const auto leases = m_book.leasesOf(id);
        for (std::int64_t task : leases)
            m_book.requeue(task);
        m_log("volunteer " + gone->volunteerId + " disconnected (" + reason.describe() + "); " +
              std::to_string(leases.size()) + " task(s) back in the queue");
    }
    m_graphs.onPeerClosed(id);
    m_peers.erase(id);
    pump();
}

void Coordinator::onMessage(std::uint64_t id, Message message) {
    Peer* sender = peer(id);
    if (!sender || m_stopped)
        return;
    if (!sender->ready) {
        onHello(id, *sender, message);
        return;
    }
    const std::string_view type = message.type();
    if (sender->role == PeerRole::Researcher) {
        if (type == "submit_matmul")
            return onSubmit(id, *sender, std::move(message));
        if (type == "submit_graph") {
            if (sender->catalog < net::kCatalogVersion)
                return replyError(id, net::requestId(message.control),
                                  Error{ErrorCode::VersionMismatch,
                                        "graph jobs need catalog " + std::to_string(net::kCatalogVersion) +
                                            "; this connection said catalog " + std::to_string(sender->catalog)});
            const std::int64_t requestId = net::requestId(message.control);
            return m_graphs.submit(id, sender->researcherId, requestId, std::move(message));
        }
        const auto jobId = net::requireString(message.control, "job");
        const bool graphJob = jobId && GraphJobs::isGraphJobId(*jobId);
        if (type == "fetch")
            return graphJob ? m_graphs.fetch(id, sender->researcherId, net::requestId(message.control), *jobId)
                            : onFetch(id, *sender, message.control);
        if (type == "release")
            return graphJob ? m_graphs.release(id, sender->researcherId, net::requestId(message.control), *jobId)
                            : onRelease(id, *sender, message.control);
    } else {
        const bool graphTask = net::requireString(message.control, "op").value_or("") == "graph";
        if (type == "result")
            return graphTask ? m_graphs.onResult(graphVolunteer(id, *sender), std::move(message))
                             : onResult(id, *sender, std::move(message));
        if (type == "task_error")
            return graphTask ? m_graphs.onTaskError(graphVolunteer(id, *sender), message.control)
                             : onTaskError(id, *sender, message.control);
    }
    closePeer(id, Error{ErrorCode::InvalidMessage, "unexpected message type '" + std::string(type) + "'"});
}

void Coordinator::onHello(std::uint64_t id, Peer& sender, const Message& message) {
    const json::object& hello = message.control;
    if (message.type() != "hello")
        return closePeer(id, Error{ErrorCode::InvalidMessage, "the first message must be hello"});
    auto protocol = net::requireInt(hello, "protocol");
    auto catalog = net::requireInt(hello, "catalog");
    if (!protocol || !catalog || *protocol != net::kProtocolVersion ||
        *catalog < net::kMatmulCatalogVersion || *catalog > net::kCatalogVersion)
        return closePeer(id, Error{ErrorCode::VersionMismatch,
                                   "this node speaks protocol 1 with catalogs 1 to 3"});
    sender.catalog = static_cast<int>(*catalog);
    json::object welcome{{"type", "welcome"},
                         {"id", net::requestId(hello)},
                         {"protocol", net::kProtocolVersion},
                         {"catalog", net::kCatalogVersion},
                         {"limits", limitsJson(m_settings.limits)}};
    if (sender.role == PeerRole::Researcher) {
        auto token = net::requireString(hello, "token");
        if (!token || token->empty())
            return closePeer(id, Error{ErrorCode::Unauthenticated, "an access token is required"});
        auto researcher = m_store.researcherByTokenHash(hashSecret(*token));
        if (!researcher)
            return closePeer(id, Error{ErrorCode::Unauthenticated, "invalid access token"});
        sender.researcherId = *researcher;
    } else if (auto ok = helloVolunteer(sender, hello, welcome); !ok) {
        return closePeer(id, ok.error());
    }
    sender.ready = true;
    sender.connection->allowTensors(); // before the welcome leaves: both go through its strand
    send(id, Message{std::move(welcome), {}});
    if (sender.role == PeerRole::Volunteer) {
        m_log("volunteer " + sender.volunteerId + " connected from " +
              sender.connection->peerAddress() + " (" + sender.backend + ", " +
              std::to_string(sender.slots) + " slot(s))");
        pump();
    }
}

Expected<void> Coordinator::helloVolunteer(Peer& sender, const json::object& hello,
                                           json::object& welcome) {
    auto capabilities = parseCapabilities(hello);
    if (!capabilities)
        return tl::unexpected(capabilities.error());
    auto admission = admitVolunteer(hello, m_store, m_random, m_clock());
    if (!admission)
        return tl::unexpected(admission.error());
    sender.volunteerId = admission->volunteerId;
    sender.backend = capabilities->backend;
    sender.slots = capabilities->slots;
    sender.memoryBytes = capabilities->memoryBytes;
    sender.dtypes = std::move(capabilities->dtypes);
    sender.graphs = capabilities->graphs && sender.catalog >= net::kCatalogVersion;
    if (admission->newSecret) {
        welcome["secret"] = *admission->newSecret;
        m_log("volunteer " + sender.volunteerId + " registered");
    }
    welcome["volunteer"] = sender.volunteerId;
    (void)m_store.touchVolunteer(sender.volunteerId, sender.backend, m_clock());
    return {};
}

int Coordinator::connectedVolunteers(std::int64_t* smallestMemory) const {
    int count = 0;
    std::int64_t smallest = 0;
    for (const auto& [id, entry] : m_peers) {
        if (entry.role != PeerRole::Volunteer || !entry.ready)
            continue;
        ++count;
        if (entry.memoryBytes > 0 && (smallest == 0 || entry.memoryBytes < smallest))
            smallest = entry.memoryBytes;
    }
    if (smallestMemory)
        *smallestMemory = smallest;
    return count;
}


void Coordinator::onSubmit(std::uint64_t id, Peer& sender, Message message) {
    const std::int64_t requestId = net::requestId(message.control);
    if (auto ok = validateMatmulInputs(message); !ok)
        return replyError(id, requestId, ok.error());
    auto tile = requestedTile(message.control);
    if (!tile)
        return replyError(id, requestId, tile.error());
    // Finite checks and blob writes are O(size): A and B are taken in on two workers at once, and
    // whichever finishes second hands the job to the core thread.
    struct Intake {
        std::mutex mutex;
        int pending = 2;
        Expected<std::string> digests[2];
    };
    auto intake = std::make_shared<Intake>();
    const double received = m_clock();
    for (int index = 0; index < 2; ++index) {
        asio::post(m_workers, [this, id, researcher = sender.researcherId, requestId, received,
                               intake, index, a = message.tensors[0], b = message.tensors[1],
                               tile = *tile] {
            auto digest = storeFiniteInput(index == 0 ? "A" : "B", *(index == 0 ? a : b), m_blobs);
            {
                std::lock_guard lock(intake->mutex);
                intake->digests[index] = std::move(digest);
                if (--intake->pending > 0)
                    return;
            }
            for (const auto& outcome : intake->digests) {
                if (!outcome) {
                    asio::post(m_core, [this, id, requestId, error = outcome.error()] {
                        replyError(id, requestId, error);
                    });
                    return;
                }
            }
            m_log("intake: inputs checked and stored in " + std::to_string(m_clock() - received) + " s");
            asio::post(m_core, [=, this] {
                createJob(id, researcher, requestId, a, b, *intake->digests[0], *intake->digests[1], tile);
            });
        });
    }
}

void Coordinator::createJob(std::uint64_t id, std::int64_t researcher, std::int64_t requestId,
                            TensorPtr a, TensorPtr b, std::string aBlob, std::string bBlob,
                            std::optional<std::pair<std::int64_t, std::int64_t>> tile) {
    PlanningInput input;
    input.m = a->shape()[0];
    input.k = a->shape()[1];
    input.n = b->shape()[1];
    input.dtype = a->dtype();
    input.volunteers = connectedVolunteers(&input.smallestVolunteerMemory);
    input.requestedTile = tile;
    input.maxTiles = m_settings.limits.maxTiles;
    input.maxTensorBytes = static_cast<std::int64_t>(m_settings.limits.maxTensorBytes);
    auto plan = planTiles(input);
    if (!plan)
        return replyError(id, requestId, plan.error());

    JobRecord record{randomId("j-", m_random), researcher, input.dtype, input.m, input.k, input.n,
                     plan->tileRows, plan->tileCols, aBlob, bBlob, "running", m_clock(), 0};
    auto loaded = labnode::createJob(
        m_store, m_blobs, std::move(record), *plan,
        std::make_shared<ColumnProbeCache>(m_random(), m_settings.verificationVectors));
    if (!loaded)
        return replyError(id, requestId, loaded.error());
    const std::string jobId = loaded->job.record.id;
    m_log("job " + jobId + " accepted: matmul " + std::to_string(input.m) + "x" +
          std::to_string(input.k) + " · " + std::to_string(input.k) + "x" + std::to_string(input.n) +
          " " + std::string(core::wireName(input.dtype)) + " in " +
          std::to_string(plan->tiles.size()) + " tile(s) of " + std::to_string(plan->tileRows) + "x" +
          std::to_string(plan->tileCols));
    m_book.addJob(std::move(loaded->job), std::move(loaded->tasks));
    if (Peer* submitter = peer(id))
        submitter->watching.insert(jobId);
    send(id, Message{json::object{{"type", "job_accepted"},
                                  {"id", requestId},
                                  {"job", jobId},
                                  {"tiles", plan->tiles.size()},
                                  {"tile", shapeJson(plan->tileRows, plan->tileCols)},
                                  {"shape", shapeJson(input.m, input.n)},
                                  {"dtype", std::string(core::wireName(input.dtype))}},
                     {}});
    pump();
}

Expected<JobRecord> Coordinator::ownedJob(const Peer& sender, const json::object& request) {
    auto jobId = net::requireString(request, "job");
    if (!jobId)
        return tl::unexpected(jobId.error());
    auto record = m_store.job(*jobId);
    // Another researcher's job is "not found" too: job ids reveal nothing.
    if (!record || record->researcherId != sender.researcherId || record->state == "released")
        return makeError(ErrorCode::NotFound, "no job " + *jobId);
    return *record;
}

void Coordinator::onFetch(std::uint64_t id, Peer& sender, const json::object& request) {
    const std::int64_t requestId = net::requestId(request);
    auto record = ownedJob(sender, request);
    if (!record)
        return replyError(id, requestId, record.error());
    const auto jobId = &record->id;
    std::int64_t done = 0;
    std::int64_t total = 0;
    if (RunningJob* running = m_book.job(*jobId)) {
        done = running->acceptedTiles;
        total = running->totalTiles;
    }
    send(id, Message{json::object{{"type", "job_status"},
                                  {"id", requestId},
                                  {"job", *jobId},
                                  {"state", record->state},
                                  {"done", done},
                                  {"total", total}},
                     {}});
    if (record->state == "running")
        sender.watching.insert(*jobId);
    else if (record->state == "done")
        sendResult(id, *record, requestId);
}

void Coordinator::onRelease(std::uint64_t id, Peer& sender, const json::object& request) {
    const std::int64_t requestId = net::requestId(request);
    auto record = ownedJob(sender, request);
    if (!record)
        return replyError(id, requestId, record.error());
    const auto jobId = &record->id;
    if (record->state == "running")
        return replyError(id, requestId,
                          Error{ErrorCode::InvalidInput, "job " + *jobId + " is still running"});
    if (auto ok = m_store.setJobState(*jobId, "released", m_clock()); !ok)
        return replyError(id, requestId, ok.error());
    for (const std::string& digest : {record->aBlob, record->bBlob}) {
        if (!m_store.blobInUse(digest, *jobId))
            m_blobs.remove(digest);
    }
    m_blobs.removeResult(*jobId);
    sender.watching.erase(*jobId);
    m_log("job " + *jobId + " released: its blobs are deleted");
    send(id, Message{json::object{{"type", "released"}, {"id", requestId}, {"job", *jobId}}, {}});
}

void Coordinator::onResult(std::uint64_t id, Peer& sender, Message message) {
    auto taskId = net::requireInt(message.control, "task");
    auto attempt = net::requireInt(message.control, "attempt");
    if (!taskId || !attempt || message.tensors.size() != 1)
        return closePeer(id, Error{ErrorCode::InvalidMessage,
                                   "result needs 'task', 'attempt' and exactly one tensor"});
    sender.inFlight.erase(*taskId);
    TileTask* task = m_book.task(*taskId);
    if (!task || task->state != TaskState::Leased || task->attempt != *attempt || task->leasedTo != id) {
        send(id, Message{json::object{{"type", "verdict"},
                                      {"task", *taskId},
                                      {"attempt", *attempt},
                                      {"verdict", "stale"}},
                         {}});
        return pump();
    }
    RunningJob* job = m_book.job(task->jobId);
    task->state = TaskState::Verifying;
    ResultRecord result;
    result.taskId = *taskId;
    result.attempt = *attempt;
    result.volunteerId = sender.volunteerId;
    result.backend = net::requireString(message.control, "backend").value_or(sender.backend).substr(0, 64);
    result.computeSeconds = net::requireNumber(message.control, "compute_seconds").value_or(0.0);
    TileCheck check = makeTileCheck(*job, *task);
    const TensorPtr tile = message.tensors[0];
    if (isTinyTile(check)) {
        verifyAndMerge(check, *tile, m_blobs, result);
        return onVerified(id, std::move(result));
    }
    asio::post(m_workers, [this, id, check = std::move(check), tile, result]() mutable {
        verifyAndMerge(check, *tile, m_blobs, result);
        asio::post(m_core, [this, id, result = std::move(result)] { onVerified(id, result); });
    });
}

void Coordinator::onVerified(std::uint64_t volunteerPeer, ResultRecord result) {
    // Verdicts that arrive together commit together: one transaction per burst, not per tile.
    m_verified.push_back({volunteerPeer, std::move(result)});
    if (m_flushPosted)
        return;
    m_flushPosted = true;
    asio::post(m_core, [this] { flushVerdicts(); });
}

void Coordinator::flushVerdicts() {
    m_flushPosted = false;
    std::vector<VerifiedResult> batch;
    batch.swap(m_verified);
    std::erase_if(batch, [this](const VerifiedResult& verified) {
        const TileTask* task = m_book.task(verified.result.taskId);
        return !task || task->state != TaskState::Verifying;
    });
    if (batch.empty())
        return;
    {
        Transaction transaction(m_store.database());
        Expected<void> ok;
        for (const VerifiedResult& verified : batch) {
            ok = m_store.recordResult(verified.result, m_clock());
            if (!ok)
                break;
        }
        if (ok)
            ok = transaction.commit();
        if (!ok) {
            m_log("could not record " + std::to_string(batch.size()) + " verdict(s) (" +
                  ok.error().message + "); their tasks go back to the queue");
            for (const VerifiedResult& verified : batch)
                m_book.requeue(verified.result.taskId);
            return pump();
        }
    }
    for (const VerifiedResult& verified : batch)
        applyVerdict(verified.peer, verified.result);
    pump();
}

void Coordinator::applyVerdict(std::uint64_t volunteerPeer, const ResultRecord& result) {
    send(volunteerPeer, Message{json::object{{"type", "verdict"},
                                             {"task", result.taskId},
                                             {"attempt", result.attempt},
                                             {"verdict", result.accepted ? "accepted" : "rejected"}},
                                {}});
    const std::string jobId = m_book.task(result.taskId)->jobId;
    if (!result.accepted) {
        m_log("task " + std::to_string(result.taskId) + " attempt " + std::to_string(result.attempt) +
              " from volunteer " + result.volunteerId + " REJECTED: " + result.reason +
              " (error/bound " + std::to_string(result.errorRatio) + "); queued for another volunteer");
        m_book.refuse(result.taskId, result.volunteerId);
        m_book.requeue(result.taskId);
        return;
    }
    const bool complete = m_book.accept(result.taskId);
    if (RunningJob* job = m_book.job(jobId))
        sendProgress(*job, complete);
    if (complete)
        finishJob(jobId);
}

void Coordinator::onTaskError(std::uint64_t id, Peer& sender, const json::object& report) {
    auto taskId = net::requireInt(report, "task");
    auto attempt = net::requireInt(report, "attempt");
    if (!taskId || !attempt)
        return closePeer(id, Error{ErrorCode::InvalidMessage, "task_error needs 'task' and 'attempt'"});
    sender.inFlight.erase(*taskId);
    TileTask* task = m_book.task(*taskId);
    if (task && task->state == TaskState::Leased && task->leasedTo == id && task->attempt == *attempt) {
        m_log("volunteer " + sender.volunteerId + " could not compute task " +
              std::to_string(*taskId) + ": " + net::requireString(report, "message").value_or("?"));
        m_book.refuse(*taskId, sender.volunteerId);
        m_book.requeue(*taskId);
    }
    pump();
}

void Coordinator::sendProgress(const RunningJob& job, bool force) {
    const double now = m_clock();
    double& last = m_lastProgress[job.record.id];
    if (!force && now - last < 0.1)
        return;
    last = now;
    for (auto& [id, entry] : m_peers) {
        if (!entry.watching.contains(job.record.id))
            continue;
        send(id, Message{json::object{{"type", "progress"},
                                      {"job", job.record.id},
                                      {"done", job.acceptedTiles},
                                      {"total", job.totalTiles}},
                         {}});
    }
}

void Coordinator::finishJob(const std::string& jobId) {
    if (auto ok = m_store.setJobState(jobId, "done", m_clock()); !ok) {
        m_log("job " + jobId + ": could not mark it done: " + ok.error().message);
        return;
    }
    auto record = m_store.job(jobId);
    m_book.removeJob(jobId);
    m_lastProgress.erase(jobId);
    const auto counts = m_store.summaryCounts(jobId);
    m_log("job " + jobId + " done: " + std::to_string(counts.accepted) + " tile(s) accepted, " +
          std::to_string(counts.rejected) + " rejected, " + std::to_string(counts.volunteers) +
          " volunteer(s)");
    for (auto& [id, entry] : m_peers) {
        if (entry.watching.erase(jobId) > 0 && record)
            sendResult(id, *record, 0);
    }
}

void Coordinator::sendResult(std::uint64_t id, const JobRecord& job, std::int64_t requestId) {
    json::object summary = summaryJson(job, m_store.summaryCounts(job.id), m_clock());
    Peer* target = peer(id);
    if (!target)
        return;
    // Reading the product back is O(size): a worker does it and sends from there.
    asio::post(m_workers, [this, connection = target->connection, job, requestId,
                           summary = std::move(summary)] {
        auto product = m_blobs.readResult(job.id, job.dtype, {job.m, job.n});
        if (!product) {
            connection->send(Message{json::object{{"type", "job_failed"},
                                                  {"job", job.id},
                                                  {"code", "internal"},
                                                  {"message", product.error().message}},
                                     {}});
            return;
        }
        connection->send(Message{json::object{{"type", "job_done"},
                                              {"id", requestId},
                                              {"job", job.id},
                                              {"summary", summary}},
                                 {std::make_shared<const core::Tensor>(std::move(*product))}});
    });
}

void Coordinator::pump() {
    if (m_stopped || (!m_book.hasQueued() && !m_graphs.hasQueued()))
        return;
    struct Assignment {
        std::uint64_t peer;
        std::int64_t task;
        std::int64_t attempt;
    };
    std::vector<Assignment> assignments;
    const double now = m_clock();
    bool progress = true;
    // Round-robin one task per volunteer per pass so every volunteer gets work.
    while (progress && (m_book.hasQueued() || m_graphs.hasQueued())) {
        progress = false;
        for (auto& [id, entry] : m_peers) {
            if (entry.role != PeerRole::Volunteer || !entry.ready ||
                static_cast<int>(entry.inFlight.size()) + m_graphs.leasesOf(id) >= entry.slots)
                continue;
            auto taskId = m_book.takeNextFor(entry.volunteerId);
            if (!taskId) {
                if (!entry.graphs)
                    continue;
                auto graphTask = m_graphs.leaseFor(graphVolunteer(id, entry));
                if (graphTask) {
                    send(id, std::move(*graphTask));
                    progress = true;
                }
                continue;
            }
            TileTask* task = m_book.task(*taskId);
            const RunningJob* job = m_book.job(task->jobId);
            if (!entry.dtypes.contains(std::string(core::wireName(job->record.dtype)))) {
                m_book.refuse(*taskId, entry.volunteerId);
                m_book.lease(*taskId, 0, task->attempt, now);
                m_book.requeue(*taskId);
                continue;
            }
            const std::int64_t attempt = task->attempt + 1;
            m_book.lease(*taskId, id, attempt, now + m_settings.leaseSeconds);
            entry.inFlight.insert(*taskId);
            assignments.push_back({id, *taskId, attempt});
            progress = true;
        }
    }
    if (assignments.empty())
        return;
    {
        // Leases are durable before any task leaves, so attempt numbers never repeat.
        Transaction transaction(m_store.database());
        bool ok = true;
        for (const Assignment& assignment : assignments) {
            ok = ok && m_store.recordLease(assignment.task, assignment.attempt,
                                           m_peers.at(assignment.peer).volunteerId, now,
                                           now + m_settings.leaseSeconds)
                           .has_value();
        }
        if (!ok || !transaction.commit()) {
            m_log("could not record leases; the tasks stay queued");
            for (const Assignment& assignment : assignments) {
                m_peers.at(assignment.peer).inFlight.erase(assignment.task);
                m_book.requeue(assignment.task);
            }
            return;
        }
    }
    for (const Assignment& assignment : assignments) {
        const TileTask* task = m_book.task(assignment.task);
        const RunningJob* job = m_book.job(task->jobId);
        auto message = taskMessage(*job, *task, assignment.attempt);
        if (!message) {
            m_log("task " + std::to_string(assignment.task) + ": " + message.error().message);
            m_book.requeue(assignment.task);
            continue;
        }
        send(assignment.peer, std::move(*message));
    }
}

void Coordinator::expireLeases() {
    m_graphs.expireLeases();
    const auto expired = m_book.expiredLeases(m_clock());
    for (std::int64_t taskId : expired) {
        const TileTask* task = m_book.task(taskId);
        if (Peer* holder = peer(task->leasedTo))
            holder->inFlight.erase(taskId);
        m_log("task " + std::to_string(taskId) + " attempt " + std::to_string(task->attempt) +
              ": lease expired; back in the queue");
        m_book.requeue(taskId);
    }
    pump();
}

void Coordinator::scheduleLeaseTimer() {
    m_leaseTimer.expires_after(std::chrono::seconds(1));
    m_leaseTimer.async_wait([this](boost::system::error_code ec) {
        if (ec || m_stopped)
            return;
        expireLeases();
        scheduleLeaseTimer();
    });
}

void Coordinator::recoverJobs() {
    for (JobRecord& record : m_store.jobsInState("running")) {
        const std::string jobId = record.id;
        auto loaded = reloadJob(m_store, m_blobs, std::move(record),
                                std::make_shared<ColumnProbeCache>(m_random(), m_settings.verificationVectors));
        if (!loaded) {
            m_log("job " + jobId + " cannot resume (" + loaded.error().message + "); marked failed");
            (void)m_store.setJobState(jobId, "failed", m_clock());
            continue;
        }
        const auto total = static_cast<std::int64_t>(loaded->tasks.size());
        m_log("job " + jobId + " resumed: " + std::to_string(loaded->acceptedTiles) + " of " +
              std::to_string(total) + " tile(s) already accepted");
        m_book.addJob(std::move(loaded->job), std::move(loaded->tasks));
        if (loaded->acceptedTiles == total)
            finishJob(jobId);
    }
}

} // namespace goblin::labnode
