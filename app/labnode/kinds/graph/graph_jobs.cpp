#include "kinds/graph/graph_jobs.hpp"

#include <functional>

#include <boost/asio/post.hpp>

#include "goblin/net/messages/researcher_messages.hpp"
#include "kinds/graph/graph_blobs.hpp"
#include "kinds/graph/graph_delivery.hpp"
#include "node/quota_gate.hpp"
#include "node/secrets.hpp"
#include "store/job_purge.hpp"
#include "work/job_control.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;
using net::Message;

GraphJobs::GraphJobs(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk,
                     Scheduler& scheduler, VerdictPath& verdicts, TrustBook& trust,
                     GraphJobSettings settings)
    : m_context(context), m_peers(peers), m_desk(desk), m_scheduler(scheduler),
      m_verdicts(verdicts), m_settings(std::move(settings)),
      m_decisions(context, m_book, scheduler, verdicts, peers, trust,
                  DecisionHooks{[this](GraphTask& task) { m_tasks.queueOpinion(task); },
                                [this](GraphTask& task) { onDecided(task); },
                                [this](GraphJob& job, const Error& error) { failJob(job, error); },
                                [this](GraphJob& job) { onRecheckDone(job); },
                                {}, // rejudge: the decisions' own
                                [this](GraphTask& task) { m_stages.onOutputsReplaced(task); }}),
      m_tasks(context, peers, scheduler, verdicts, m_book, m_decisions,
              m_settings.secondOpinionWaitSeconds),
      m_stages(context, m_book, scheduler,
               [this](GraphJob& job, const Error& error) { failJob(job, error); }),
      m_replan(context, m_book, m_tasks, m_settings.intake,
               std::bind_front(&GraphJobs::addJob, this)),
      m_audits(context, peers, trust, m_settings.intake,
               [this](const std::string& jobId, const std::vector<core::Tensor>& merged) {
                   if (GraphJob* job = m_book.job(jobId); job && job->state == JobState::Done)
                       job->result = merged;
               }),
      m_retention(context, m_settings.auditRetentionSeconds),
      m_plans(context, peers, desk, m_settings.intake, [this] { return m_tasks.volunteerPool(); }) {
    trust.addQuarantineListener([this](const std::string& volunteerId, const std::string& reason) {
        m_decisions.onQuarantined(volunteerId);
        m_audits.onQuarantined(volunteerId, reason);
    });
}

void GraphJobs::recover() {
    for (const GraphJobRow& row : unreleasedGraphJobs(m_context.store.database())) {
        if (auto resumed = resumeJob(row); !resumed) {
            m_context.log.error("graph job " + row.id + " cannot resume (" +
                                resumed.error().message + "); marked failed");
            (void)setGraphJobState(m_context.store.database(), row.id, JobState::Failed,
                                   m_context.clock());
        }
    }
    m_audits.recover();
    m_retention.start();
}

Expected<void> GraphJobs::resumeJob(const GraphJobRow& row) {
    auto intake = reloadGraphIntake(row, m_settings.intake, m_context.blobs);
    if (!intake)
        return tl::unexpected(intake.error());
    const auto tasks = graphTasksOf(m_context.store.database(), row.id);
    if (tasks.size() != intake->chunks.size())
        return makeError(ErrorCode::Internal, "its tasks do not match its chunks");
    auto resumed = addJob(row, std::move(*intake), tasks);
    if (!resumed)
        return tl::unexpected(resumed.error());
    GraphJob& added = **resumed;
    m_context.log("graph job " + added.id + " resumed: " + std::to_string(added.done) + " of " +
                  std::to_string(added.taskIds.size()) + " task(s) already decided");
    if (added.done == static_cast<std::int64_t>(added.taskIds.size()))
        finishJob(added);
    return {};
}

Expected<GraphJob*> GraphJobs::addJob(const GraphJobRow& row, GraphIntake intake,
                                      const std::vector<GraphTaskRow>& tasks) {
    GraphJob job;
    job.id = row.id;
    job.researcher = row.researcherId;
    job.createdAt = row.createdAt;
    job.submission = std::move(intake.submission);
    job.chunks = std::move(intake.chunks);
    GraphJob& added = m_book.add(std::move(job), tasks, m_context.blobs);
    if (auto filled = m_stages.fillQueued(added, added.taskIds); !filled) { // stages ready now
        m_book.remove(added.id);
        return tl::unexpected(filled.error());
    }
    return &added;
}

void GraphJobs::submit(const ResearcherRequest& request, Message message) {
    // Decoding, validating, slicing and storing the inputs are O(size): a worker does them.
    asio::post(m_context.workers, [this, request, pool = m_tasks.volunteerPool(),
                                   message = std::move(message)] {
        auto intake = takeInGraph(message, pool, m_settings.intake, m_context.blobs);
        asio::post(m_context.core, [this, request, intake = std::move(intake)]() mutable {
            if (!intake)
                return m_desk.replyError(request.peer, request.requestId, intake.error());
            createJob(request, std::move(*intake));
        });
    });
}

Expected<GraphJob*> GraphJobs::insertJob(std::int64_t researcherId, GroupOwner owner,
                                         GraphIntake intake) {
    GraphJobRow row{randomId("g-", m_context.random),
                    researcherId,
                    JobState::Running,
                    static_cast<std::int64_t>(intake.chunks.size()),
                    std::move(intake.request),
                    std::move(intake.inputs),
                    m_context.clock(),
                    std::move(owner)};
    auto tasks = insertGraphJobAndTasks(m_context.store.database(), row);
    if (!tasks)
        return makeError(ErrorCode::Internal, tasks.error().message);
    auto inserted = addJob(row, std::move(intake), *tasks);
    if (!inserted)
        return tl::unexpected(inserted.error());
    GraphJob& added = **inserted;
    m_context.log("graph job " + added.id + row.owner.describe() +
                  " accepted: " + std::to_string(added.submission.graph.nodes.size()) +
                  " node(s), " + describeTasks(added.chunks) + ", " +
                  (opinionsWanted(added) > 1 ? std::string("each computed twice")
                                             : std::string("each checked by the node")));
    return &added;
}

void GraphJobs::createJob(const ResearcherRequest& request, GraphIntake intake) {
    // Its FLOPs are known once it is planned: over the quota, nothing of it is kept.
    if (auto fits =
            checkQuota(m_context.store.database(), request.researcherId, JobSize{0, intake.flops});
        !fits) {
        deleteUnusedBlobs(m_context.store, m_context.blobs, intake.inputs);
        return m_desk.replyError(request.peer, request.requestId, fits.error());
    }
    auto added = insertJob(request.researcherId, {}, std::move(intake));
    if (!added)
        return m_desk.replyError(request.peer, request.requestId, added.error());
    m_desk.watch((*added)->id, request.peer);
    m_peers.send(request.peer, net::toMessage(net::GraphJobAccepted{
                                   request.requestId, (*added)->id,
                                   static_cast<std::int64_t>((*added)->taskIds.size())}));
    m_scheduler.wake();
}

void GraphJobs::submitFor(std::int64_t researcherId, GroupOwner owner, Message message,
                          std::function<void(Expected<std::string>)> accepted) {
    asio::post(m_context.workers, [this, researcherId, owner = std::move(owner),
                                   pool = m_tasks.volunteerPool(), message = std::move(message),
                                   accepted = std::move(accepted)]() mutable {
        auto intake =
            takeInGraph(message, pool, m_settings.intake, m_context.blobs, Unfittable::Waits);
        asio::post(m_context.core,
                   [this, researcherId, owner = std::move(owner), intake = std::move(intake),
                    accepted = std::move(accepted)]() mutable {
                       if (!intake)
                           return accepted(tl::unexpected(intake.error()));
                       auto added = insertJob(researcherId, std::move(owner), std::move(*intake));
                       if (!added)
                           return accepted(tl::unexpected(added.error()));
                       accepted((*added)->id);
                       m_scheduler.wake();
                   });
    });
}

bool GraphJobs::follow(const std::string& jobId, GraphJobFollower follower) {
    GraphJob* job = m_book.job(jobId);
    if (!job || job->state == JobState::Failed)
        return false;
    if (job->state == JobState::Done) {
        asio::post(m_context.core, [this, jobId, follower = std::move(follower)] {
            if (GraphJob* done = m_book.job(jobId); done && done->state == JobState::Done)
                follower.done(jobId, done->result);
        });
        return true;
    }
    m_followers[jobId] = std::move(follower);
    return true;
}

void GraphJobs::releaseFor(const std::string& jobId) {
    m_followers.erase(jobId);
    GraphJob* job = m_book.job(jobId);
    if (!job || job->state == JobState::Running)
        return;
    if (auto outcome = m_retention.release(jobId); !outcome)
        m_context.log.error("graph job " + jobId + " not released: " + outcome.error().message);
    m_book.remove(jobId);
}

GraphJob* GraphJobs::ownedJob(const ResearcherRequest& request, const std::string& jobId) {
    if (GraphJob* job = m_book.job(jobId); job && job->researcher == request.researcherId)
        return job;
    // A failed or released job, or another researcher's: say only what this researcher may know.
    const auto row = graphJob(m_context.store.database(), jobId);
    if (row && row->researcherId == request.researcherId && row->state == JobState::Failed)
        m_desk.replyError(request.peer, request.requestId,
                          Error{ErrorCode::Internal, "graph job " + jobId + " failed"});
    else
        m_desk.replyError(request.peer, request.requestId,
                          Error{ErrorCode::NotFound, "no job " + jobId});
    return nullptr;
}

std::optional<GraphJobRow> GraphJobs::cancelledJob(const ResearcherRequest& request,
                                                   const std::string& jobId) {
    auto row = graphJob(m_context.store.database(), jobId);
    if (!row || row->researcherId != request.researcherId || row->state != JobState::Cancelled)
        return std::nullopt;
    return row;
}

void GraphJobs::fetch(const ResearcherRequest& request, const std::string& jobId) {
    if (const auto cancelled = cancelledJob(request, jobId))
        return m_desk.answerCancelledFetch(request.peer, request.requestId, jobId, 0,
                                           cancelled->tasks);
    GraphJob* job = ownedJob(request, jobId);
    if (!job)
        return;
    const auto total = static_cast<std::int64_t>(job->taskIds.size());
    m_desk.answerFetch(request.peer,
                       net::JobStatus{request.requestId, jobId,
                                      std::string(jobStateName(job->state)), job->done, total},
                       [&] {
                           if (job->state == JobState::Done)
                               deliver(request.peer, *job, request.requestId);
                       });
}

void GraphJobs::release(const ResearcherRequest& request, const std::string& jobId) {
    if (cancelledJob(request, jobId)) { // its data went with the cancel
        if (auto ok = setGraphJobState(m_context.store.database(), jobId, JobState::Released,
                                       m_context.clock());
            !ok)
            return m_desk.replyError(request.peer, request.requestId, ok.error());
        m_desk.unwatch(jobId, request.peer);
        return m_peers.send(request.peer, net::toMessage(net::Released{request.requestId, jobId}));
    }
    GraphJob* job = ownedJob(request, jobId);
    if (!job)
        return;
    if (m_desk.refuseRunningRelease(request, jobId, job->state))
        return;
    auto outcome = m_retention.release(jobId);
    if (!outcome)
        return m_desk.replyError(request.peer, request.requestId, outcome.error());
    m_book.remove(jobId);
    m_desk.unwatch(jobId, request.peer);
    m_context.log("graph job " + jobId + " released: " +
                  (*outcome == ReleaseOutcome::Deleted
                       ? std::string("its blobs are deleted")
                       : std::string("its data is kept for audits until its retention ends")));
    m_peers.send(request.peer, net::toMessage(net::Released{request.requestId, jobId}));
}

Expected<void> GraphJobs::cancel(const std::string& jobId, const std::string& who) {
    GraphJob* job = m_book.job(jobId);
    if (!job || job->state != JobState::Running)
        return makeError(ErrorCode::InvalidInput, "graph job " + jobId + " is not running");
    if (auto ok = setGraphJobState(m_context.store.database(), jobId, JobState::Cancelled,
                                   m_context.clock());
        !ok)
        return ok;
    job->state =
        JobState::Cancelled; // a comparison or merge still on a worker finds it so and stops
    m_book.endJob(jobId, "its job was cancelled by " + who);
    for (std::int64_t taskId : job->taskIds)
        m_scheduler.withdraw(taskOp(), taskId); // a result still computing is answered stale
    const Error error = cancelledError(jobId, who);
    m_desk.reportFailure(jobId, error);
    if (auto follower = m_followers.extract(jobId))
        follower.mapped().failed(jobId, error);
    m_tasks.forgetInputsOf(jobId);
    m_book.remove(jobId);
    m_retention.deleteData(jobId);
    m_context.log("graph job " + jobId + " cancelled by " + who +
                  ": its tasks are dropped and its data deleted");
    return {};
}

Expected<void> GraphJobs::purge(const std::string& jobId) {
    if (!graphJob(m_context.store.database(), jobId))
        return makeError(ErrorCode::NotFound, "no job " + jobId);
    if (GraphJob* job = m_book.job(jobId)) {
        if (job->state == JobState::Running)
            return makeError(ErrorCode::InvalidInput, "graph job " + jobId + " is running");
        m_followers.erase(jobId);
        m_book.remove(jobId);
    }
    m_retention.deleteData(jobId);
    return purgeJobRows(m_context.store.database(), "graph", jobId);
}

void GraphJobs::audit(const ResearcherRequest& request, const std::string& jobId) {
    // Released jobs too: the Python client releases every job once it has its outputs.
    const auto row = graphJob(m_context.store.database(), jobId);
    if (!row || row->researcherId != request.researcherId)
        return m_desk.replyError(request.peer, request.requestId,
                                 Error{ErrorCode::NotFound, "no job " + jobId});
    m_audits.report(request.peer, request.requestId, *row);
}

void GraphJobs::onDecided(GraphTask& task) {
    GraphJob& job = m_book.jobOf(task);
    // Readers waiting on nothing else queued with its values, woken now (no result wakes them).
    if (auto filled = m_stages.fillQueued(job, m_book.readersOf(task)); !filled)
        return failJob(job, filled.error());
    m_scheduler.wake();
    ++job.done;
    m_stages.redoIfPending(job); // it may have waited for this decision
    const auto total = static_cast<std::int64_t>(job.taskIds.size());
    m_desk.reportProgress(job.id, job.done, total, ProgressPace::EveryStep);
    if (job.done == total)
        finishJob(job);
}

void GraphJobs::failJob(GraphJob& job, const Error& error) {
    if (job.state != JobState::Running)
        return;
    job.state = JobState::Failed;
    (void)setGraphJobState(m_context.store.database(), job.id, JobState::Failed, m_context.clock());
    m_context.log.warn("graph job " + job.id + " failed: " + error.describe());
    m_book.endJob(job.id, "its job failed");
    for (std::int64_t taskId : job.taskIds)
        m_scheduler.withdraw(taskOp(), taskId);
    m_tasks.forgetInputsOf(job.id);
    m_desk.reportFailure(job.id, error);
    if (auto follower = m_followers.extract(job.id))
        follower.mapped().failed(job.id, error);
}

void GraphJobs::onRecheckDone(GraphJob& job) {
    if (job.state == JobState::Running && job.done == static_cast<std::int64_t>(job.taskIds.size()))
        finishJob(job);
}

void GraphJobs::finishJob(GraphJob& job) {
    m_stages.redoIfPending(job);
    if (job.redeciding > 0 || !job.redoPending.empty())
        return; // a recheck's end finishes it
    if (!m_book.takeMerge(job, "every task is decided: the node merges their outputs"))
        return; // being merged already
    std::vector<std::vector<core::Tensor>> outputs;
    for (std::int64_t taskId : job.taskIds)
        outputs.push_back(m_book.task(taskId)->outputs);
    // Merging the chunks' outputs is O(size): a worker does it.
    asio::post(m_context.workers, [this, jobId = job.id, submission = job.submission,
                                   chunks = job.chunks, outputs = std::move(outputs)] {
        auto merged = mergeChunkOutputs(submission, chunks, outputs);
        asio::post(m_context.core, [this, jobId, merged = std::move(merged)]() mutable {
            onMerged(jobId, std::move(merged));
        });
    });
}

void GraphJobs::onMerged(const std::string& jobId, Expected<std::vector<core::Tensor>> merged) {
    GraphJob* found = m_book.job(jobId);
    if (!found || found->state != JobState::Running || !m_book.merging(*found))
        return; // gone, ended, or called off (a task is rechecked or redone: its end merges)
    GraphJob& job = *found;
    if (!merged)
        return failJob(job, merged.error());
    if (job.redeciding > 0 || !job.redoPending.empty())
        return m_book.callOffMerge(job, "a task it merges is rechecked or computed again");
    m_book.mergeDecided(job);
    job.result = std::move(*merged);
    job.state = JobState::Done;
    Database& db = m_context.store.database();
    (void)setGraphJobState(db, job.id, JobState::Done, m_context.clock());
    m_context.log("graph job " + job.id + " done: " + describeVerdicts(db, job.id));
    m_desk.deliverToWatchers(job.id, [&](std::uint64_t peer) { deliver(peer, job, 0); });
    // Inputs and per-task outputs are no longer needed; the merged result stays until release.
    for (std::int64_t taskId : job.taskIds) {
        m_book.task(taskId)->outputs.clear();
        m_book.task(taskId)->replicas.clear();
    }
    job.chunks.clear();
    job.chunkGraphs.clear();
    job.submission.inputs.clear();
    m_tasks.forgetInputsOf(jobId);
    if (auto follower = m_followers.extract(jobId)) // last: it may release the job
        follower.mapped().done(jobId, job.result);
}

void GraphJobs::deliver(std::uint64_t peer, const GraphJob& job, std::int64_t requestId) {
    const FinishedGraph finished{job.id, static_cast<std::int64_t>(job.taskIds.size()),
                                 job.verifySeconds, m_context.clock() - job.createdAt, job.result};
    m_peers.send(peer, graphDoneMessage(m_context.store.database(), finished, requestId));
}

} // namespace goblin::labnode
