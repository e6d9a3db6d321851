#include "kinds/matmul/matmul_jobs.hpp"

#include <boost/asio/post.hpp>

#include "goblin/net/json_fields.hpp"
#include "goblin/net/messages/researcher_messages.hpp"
#include "goblin/net/messages/row_block_messages.hpp"
#include "goblin/net/messages/upload_messages.hpp"
#include "kinds/matmul/matmul_delivery.hpp"
#include "kinds/matmul/matmul_request.hpp"
#include "kinds/matmul/task_message.hpp"
#include "kinds/matmul/tile_node_compute.hpp"
#include "kinds/matmul/tile_verifier.hpp"
#include "store/job_purge.hpp"
#include "work/job_control.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;

MatmulJobs::MatmulJobs(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk,
                       Scheduler& scheduler, VerdictPath& verdicts, MatmulSettings settings)
    : m_context(context), m_peers(peers), m_desk(desk), m_scheduler(scheduler),
      m_verdicts(verdicts), m_uploads(context, peers, desk),
      m_intake(context, peers, desk, m_uploads, settings,
               [this](const ResearcherRequest& request, LoadedJob loaded,
                      const plan::TilePlan& plan) { onCreated(request, std::move(loaded), plan); }),
      m_maxTensorBytes(settings.limits.maxTensorBytes) {}

void MatmulJobs::recover() {
    for (JobRecord& record : m_context.store.jobsInState(JobState::Running)) {
        const std::string jobId = record.id;
        auto loaded =
            reloadJob(m_context.store, m_context.blobs, std::move(record), m_intake.newProbes());
        if (!loaded) {
            m_context.log.error("job " + jobId + " cannot resume (" + loaded.error().message +
                                "); marked failed");
            (void)m_context.store.setJobState(jobId, JobState::Failed, m_context.clock());
            continue;
        }
        m_book.addJob(std::move(loaded->job), std::move(loaded->tasks));
        const std::int64_t accepted = m_book.acceptedTiles(jobId);
        const std::int64_t total = m_book.totalTiles(jobId);
        m_context.log("job " + jobId + " resumed: " + std::to_string(accepted) + " of " +
                      std::to_string(total) + " tile(s) already accepted");
        if (accepted == total)
            finishJob(jobId);
    }
}

void MatmulJobs::submit(const ResearcherRequest& request, net::Message message) {
    m_intake.submit(request, std::move(message));
}

void MatmulJobs::onCreated(const ResearcherRequest& request, LoadedJob loaded,
                           const plan::TilePlan& plan) {
    const JobRecord& record = loaded.job.record;
    const std::string jobId = record.id;
    m_context.log("job " + jobId + " accepted: matmul " + std::to_string(record.m) + "x" +
                  std::to_string(record.k) + " · " + std::to_string(record.k) + "x" +
                  std::to_string(record.n) + " " + std::string(core::wireName(record.dtype)) +
                  " in " + std::to_string(plan.tiles.size()) + " tile(s) of " +
                  std::to_string(plan.tileRows) + "x" + std::to_string(plan.tileCols));
    const net::MatmulJobAccepted accepted{request.requestId,
                                          jobId,
                                          static_cast<std::int64_t>(plan.tiles.size()),
                                          {plan.tileRows, plan.tileCols},
                                          {record.m, record.n},
                                          record.dtype,
                                          loaded.job.streamTo != 0};
    m_book.addJob(std::move(loaded.job), std::move(loaded.tasks));
    m_desk.watch(jobId, request.peer);
    m_peers.send(request.peer, net::toMessage(accepted));
    m_scheduler.wake();
}

Expected<JobRecord> MatmulJobs::ownedJob(const ResearcherRequest& request,
                                         const std::string& jobId) {
    auto record = m_context.store.job(jobId);
    // Another researcher's job is "not found" too: job ids reveal nothing.
    if (!record || record->researcherId != request.researcherId ||
        record->state == JobState::Released)
        return makeError(ErrorCode::NotFound, "no job " + jobId);
    return *record;
}

void MatmulJobs::fetch(const ResearcherRequest& request, const std::string& jobId) {
    auto record = ownedJob(request, jobId);
    if (!record)
        return m_desk.replyError(request.peer, request.requestId, record.error());
    std::int64_t done = 0;
    std::int64_t total = 0;
    if (RunningJob* running = m_book.job(jobId)) {
        done = m_book.acceptedTiles(jobId);
        total = m_book.totalTiles(jobId);
        // A fetch means the submitter gave up on its stream (a timeout): C comes whole.
        if (running->streamTo == request.peer)
            running->streamTo = 0;
    }
    if (record->state == JobState::Cancelled)
        return m_desk.answerCancelledFetch(request.peer, request.requestId, jobId, 0, 0);
    m_desk.answerFetch(request.peer,
                       net::JobStatus{request.requestId, jobId,
                                      std::string(jobStateName(record->state)), done, total},
                       [&] {
                           if (record->state == JobState::Done)
                               deliver(request.peer, *record, request.requestId);
                       });
}

Expected<void> MatmulJobs::cancel(const std::string& jobId, const std::string& who) {
    const RunningJob* running = m_book.job(jobId);
    if (!running)
        return makeError(ErrorCode::InvalidInput, "job " + jobId + " is not running");
    const JobRecord record = running->record;
    if (auto ok = m_context.store.setJobState(jobId, JobState::Cancelled, m_context.clock()); !ok)
        return ok;
    // Its leases end (a result still computing is answered stale) and its tiles leave the queue.
    for (std::int64_t task : m_book.taskIdsOf(jobId))
        m_scheduler.withdraw(taskOp(), task);
    m_book.removeJob(jobId);
    deleteData(record);
    m_context.log("job " + jobId + " cancelled by " + who + ": its tiles are dropped and its " +
                  "blobs deleted");
    m_desk.reportFailure(jobId, cancelledError(jobId, who));
    return {};
}

Expected<void> MatmulJobs::purge(const std::string& jobId) {
    auto record = m_context.store.job(jobId);
    if (!record)
        return makeError(ErrorCode::NotFound, "no job " + jobId);
    if (m_book.job(jobId))
        return makeError(ErrorCode::InvalidInput, "job " + jobId + " is running");
    deleteData(*record);
    return purgeJobRows(m_context.store.database(), "matmul", jobId);
}

void MatmulJobs::deleteData(const JobRecord& job) {
    for (const std::string& digest : {job.aBlob, job.bBlob})
        if (!m_context.store.blobInUse(digest, job.id))
            m_context.blobs.remove(digest);
    m_context.blobs.removeResult(job.id);
}

void MatmulJobs::release(const ResearcherRequest& request, const std::string& jobId) {
    auto record = ownedJob(request, jobId);
    if (!record)
        return m_desk.replyError(request.peer, request.requestId, record.error());
    if (m_desk.refuseRunningRelease(request, jobId, record->state))
        return;
    if (auto ok = m_context.store.setJobState(jobId, JobState::Released, m_context.clock()); !ok)
        return m_desk.replyError(request.peer, request.requestId, ok.error());
    deleteData(*record);
    m_desk.unwatch(jobId, request.peer);
    m_context.log("job " + jobId + " released: its blobs are deleted");
    m_peers.send(request.peer, net::toMessage(net::Released{request.requestId, jobId}));
}

void MatmulJobs::audit(const ResearcherRequest& request, const std::string& jobId) {
    auto record = m_context.store.job(jobId);
    if (!record || record->researcherId != request.researcherId)
        return m_desk.replyError(request.peer, request.requestId,
                                 Error{ErrorCode::NotFound, "no job " + jobId});
    m_peers.send(request.peer,
                 net::toMessage(net::AuditReport{request.requestId, jobId, "clean", {}, {}}));
}

std::optional<TaskClaim> MatmulJobs::claimTaskFor(const Peer& volunteer,
                                                  const TaskFilter& mayTake) {
    auto leased =
        m_book.leaseNextFor(volunteer.volunteer.volunteerId, &volunteer.volunteer.dtypes, &mayTake);
    if (!leased)
        return std::nullopt;
    return TaskClaim{leased->task, leased->attempt};
}

TaskFrame MatmulJobs::taskFrame(const Lease& lease) {
    const TileTask& task = *m_book.task(lease.task);
    TileFrameSource source = tileFrameSource(*m_book.job(task.jobId), task, lease.attempt);
    const bool heavy = source.elements() > kTinyTileElements;
    return TaskFrame{[source = std::move(source)] { return taskMessage(source); }, heavy};
}

void MatmulJobs::onResult(const Lease& lease, net::Message message) {
    TileTask* task = m_book.task(lease.task);
    if (!task || m_book.state(lease.task) != TaskState::Leased)
        return m_verdicts.sendStale(lease.peer, lease.task, lease.attempt);
    if (message.tensors.size() != 1) {
        m_book.requeue(lease.task, "its result was malformed");
        return m_peers.close(lease.peer,
                             Error{ErrorCode::InvalidMessage,
                                   "result needs 'task', 'attempt' and exactly one tensor"});
    }
    m_book.startVerifying(lease.task);
    VerdictRecord verdict;
    verdict.kind = std::string(taskOp());
    verdict.task = lease.task;
    verdict.attempt = lease.attempt;
    verdict.volunteerId = lease.volunteerId;
    verdict.backend =
        net::requireString(message.control, "backend").value_or(lease.backend).substr(0, 64);
    verdict.computeSeconds = net::requireNumber(message.control, "compute_seconds").value_or(0.0);
    verdict.method = "freivalds-f64";
    TileCheck check = makeTileCheck(*m_book.job(task->jobId), *task);
    const net::TensorPtr tile = message.tensors[0];
    if (isTinyTile(check)) {
        verifyAndMerge(check, *tile, m_context.blobs, verdict);
        return onVerified(lease.peer, std::move(verdict), tile);
    }
    asio::post(m_context.workers, [this, peer = lease.peer, check = std::move(check), tile,
                                   verdict]() mutable {
        verifyAndMerge(check, *tile, m_context.blobs, verdict);
        asio::post(m_context.core, [this, peer, verdict = std::move(verdict), tile]() mutable {
            onVerified(peer, std::move(verdict), tile);
        });
    });
}

void MatmulJobs::onVerified(std::uint64_t peer, VerdictRecord verdict, net::TensorPtr tile) {
    if (!m_book.task(verdict.task)) { // its job was cancelled while the tile was verified
        if (peer != 0)
            m_verdicts.sendStale(peer, verdict.task, verdict.attempt);
        return;
    }
    // Verdicts that arrive together commit together: one transaction per burst, not per tile.
    VerdictBatch batch;
    batch.committed = [this, tile = std::move(tile)](const VerdictBatch& done) {
        applyVerdict(done.verdicts.front().record, tile);
    };
    batch.failed = [this](const VerdictBatch& lost, const Error& error) {
        const std::int64_t task = lost.verdicts.front().record.task;
        m_context.log.error("could not record the verdict of task " + std::to_string(task) + " (" +
                            error.message + "); it goes back to the queue");
        m_book.requeue(task, "its verdict could not be recorded");
        m_scheduler.wake();
    };
    batch.verdicts.push_back({peer, std::move(verdict)});
    m_verdicts.enqueue(std::move(batch));
}

void MatmulJobs::applyVerdict(const VerdictRecord& verdict, const net::TensorPtr& tile) {
    const TileTask* task = m_book.task(verdict.task);
    if (!task)
        return;
    const std::string jobId = task->jobId;
    if (!verdict.accepted) {
        m_context.log.warn("task " + std::to_string(verdict.task) + " attempt " +
                           std::to_string(verdict.attempt) + " from volunteer " +
                           verdict.volunteerId + " REJECTED: " + verdict.reason + " (error/bound " +
                           std::to_string(verdict.ratio) + "); queued for another volunteer");
        m_book.refuse(verdict.task, verdict.volunteerId);
        m_book.requeue(verdict.task, "its result was rejected: " + verdict.reason);
        return m_scheduler.wake();
    }
    const bool complete = m_book.accept(verdict.task);
    if (const RunningJob* job = m_book.job(jobId)) {
        // Pushed before the job_done this connection gets, which then carries no product.
        if (job->streamTo != 0 && tile)
            m_peers.send(job->streamTo,
                         net::toMessage(net::ResultTile{jobId, task->row0, task->col0, tile}));
        m_desk.reportProgress(jobId, m_book.acceptedTiles(jobId), m_book.totalTiles(jobId),
                              ProgressPace::Throttled);
    }
    if (complete)
        finishJob(jobId);
}

void MatmulJobs::onLeaseLost(const Lease& lease, LeaseLoss why, const std::string& detail) {
    if (!m_book.task(lease.task))
        return;
    switch (why) {
    case LeaseLoss::Expired:
        m_context.log.warn("task " + std::to_string(lease.task) + " attempt " +
                           std::to_string(lease.attempt) + ": lease expired; back in the queue");
        break;
    case LeaseLoss::TaskError:
        m_context.log.warn("volunteer " + lease.volunteerId + " could not compute task " +
                           std::to_string(lease.task) + ": " + detail);
        m_book.refuse(lease.task, lease.volunteerId);
        break;
    case LeaseLoss::NotSent:
        m_context.log("task " + std::to_string(lease.task) + ": " + detail);
        break;
    case LeaseLoss::Disconnected:
        break;
    }
    m_book.requeue(lease.task, describe(why));
}

void MatmulJobs::computeOnNode(std::int64_t taskId) {
    if (!m_book.takeForNode(taskId))
        return;
    m_scheduler.withdraw(taskOp(), taskId); // a late answer is stale
    const TileTask& task = *m_book.task(taskId);
    VerdictRecord verdict;
    verdict.kind = std::string(taskOp());
    verdict.task = taskId;
    asio::post(m_context.workers,
               [this, check = makeTileCheck(*m_book.job(task.jobId), task), verdict]() mutable {
                   net::TensorPtr tile = computeAndMergeOnNode(check, m_context.blobs, verdict);
                   asio::post(m_context.core, [this, verdict = std::move(verdict), tile]() mutable {
                       onVerified(0, std::move(verdict), tile);
                   });
               });
}

void MatmulJobs::finishJob(const std::string& jobId) {
    if (auto ok = m_context.store.setJobState(jobId, JobState::Done, m_context.clock()); !ok) {
        m_context.log.error("job " + jobId + ": could not mark it done: " + ok.error().message);
        return;
    }
    auto record = m_context.store.job(jobId);
    const std::uint64_t streamedTo = m_book.job(jobId) ? m_book.job(jobId)->streamTo : 0;
    m_book.removeJob(jobId);
    const auto counts = m_context.store.summaryCounts(jobId);
    m_context.log("job " + jobId + " done: " + std::to_string(counts.accepted) +
                  " tile(s) accepted, " + std::to_string(counts.rejected) + " rejected, " +
                  std::to_string(counts.volunteers) + " volunteer(s)");
    m_desk.deliverToWatchers(jobId, [&](std::uint64_t peer) {
        if (record)
            deliver(peer, *record, 0, peer == streamedTo);
    });
}

void MatmulJobs::deliver(std::uint64_t peer, const JobRecord& job, std::int64_t requestId,
                         bool streamed) {
    if (const Peer* target = m_peers.find(peer))
        deliverMatmulResult(m_context, target->link, job, requestId, m_maxTensorBytes, streamed);
}

Expected<void> MatmulJobs::onRouted(const ResearcherRequest& request, net::Message message) {
    const std::string_view type = message.type();
    if (type == "upload") {
        auto upload = net::parseUpload(message.control);
        if (!upload)
            return tl::unexpected(upload.error());
        m_uploads.begin(request, *upload);
        return {};
    }
    if (type == "upload_rows") {
        auto rows = net::parseUploadRows(message);
        if (!rows)
            return tl::unexpected(rows.error());
        m_uploads.receiveRows(request, std::move(*rows));
        return {};
    }
    if (type == "drop_upload") {
        auto drop = net::parseDropUpload(message.control);
        if (!drop)
            return tl::unexpected(drop.error());
        m_uploads.drop(request, *drop);
        return {};
    }
    auto fetch = net::parseFetchRows(message.control);
    if (!fetch)
        return tl::unexpected(fetch.error());
    return fetchRows(request, std::move(*fetch));
}

Expected<void> MatmulJobs::fetchRows(const ResearcherRequest& request, net::FetchRows fetch) {
    auto record = ownedJob(request, fetch.job);
    if (!record)
        return tl::unexpected(record.error());
    const Peer* target = m_peers.find(request.peer);
    if (!target)
        return {};
    fetch.id = request.requestId;
    return deliverMatmulRows(m_context, target->link, *record, fetch, m_maxTensorBytes);
}

} // namespace goblin::labnode
