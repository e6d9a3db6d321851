#include "kinds/train/training_jobs.hpp"

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include "goblin/core/precise_json.hpp"
#include "goblin/net/messages/researcher_messages.hpp"
#include "kinds/graph/graph_blobs.hpp"
#include "kinds/graph/graph_store.hpp"
#include "kinds/graph/graph_submission.hpp"
#include "kinds/train/rewind_store.hpp"
#include "kinds/train/train_delivery.hpp"
#include "node/quota_gate.hpp"
#include "node/secrets.hpp"
#include "store/job_purge.hpp"
#include "work/job_control.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;
namespace json = boost::json;

TrainingJobs::TrainingJobs(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk,
                           GraphJobs& graphs, core::graph::GraphLimits limits)
    : m_context(context), m_peers(peers), m_desk(desk), m_graphs(graphs), m_limits(limits),
      m_batches(context, peers, desk,
                StreamedBatches::Hooks{[this](const std::string& jobId) { return findJob(jobId); },
                                       [this](TrainingJob& job) { m_rounds.start(job); },
                                       [this](TrainingJob& job) { finishJob(job, false); }}),
      m_rounds(context, peers, desk, graphs, m_batches,
               TrainingRounds::Hooks{
                   [this](const std::string& jobId) { return findJob(jobId); },
                   [this](TrainingJob& job, const Error& error) { failJob(job, error); },
                   [this](TrainingJob& job) { finishJob(job, true); }}),
      m_late(context, peers, desk, graphs, m_rounds,
             LateCatches::Hooks{[this](const std::string& jobId) { return findJob(jobId); },
                                [this](const std::string& jobId) { return loadRetained(jobId); },
                                [this](const std::string& jobId) { unload(jobId); },
                                [this](TrainingJob& job) {
                                    m_desk.deliverToWatchers(
                                        job.id, [&](std::uint64_t peer) { deliver(peer, job, 0); });
                                }}) {
    graphs.addCorrectionListener([this](const std::string& graphJob, const std::string& why) {
        m_late.onRoundCorrected(graphJob, why);
    });
    graphs.addRetentionListener([this](double endedBefore) { m_late.prune(endedBefore); });
}

TrainingJob* TrainingJobs::loadRetained(const std::string& jobId) {
    const auto row = trainJob(m_context.store.database(), jobId);
    if (!row || row->state != JobState::Retained)
        return nullptr;
    if (auto loaded = resumeJob(*row); !loaded) {
        m_context.log.error("training job " + jobId + " cannot be read back (" +
                            loaded.error().message + ")");
        return nullptr;
    }
    return findJob(jobId);
}

Expected<void> TrainingJobs::onRouted(const ResearcherRequest& request, net::Message message) {
    auto batch = net::parseTrainBatch(message);
    if (!batch)
        return tl::unexpected(batch.error());
    return m_batches.receive(request, std::move(*batch));
}

std::string TrainingJobs::whyNothingComputes(const std::string& jobId) {
    const TrainingJob* job = findJob(jobId);
    if (!job)
        return {};
    if (job->waitingForBatch)
        return "round " + std::to_string(job->round()) + " waits for batch " +
               std::to_string(job->roundsDone) +
               " of the streamed data (after a lost connection, fetch_train(job, model, "
               "data=...) sends it)";
    if (job->commitRetries > 0)
        return "round " + std::to_string(job->round()) +
               " was verified, but the node cannot write it to its database; it tries again "
               "every second (the node's log says why)";
    return job->roundJob.empty() ? std::string() : m_graphs.whyNothingComputes(job->roundJob);
}

TrainingJob* TrainingJobs::findJob(const std::string& jobId) {
    auto it = m_jobs.find(jobId);
    return it == m_jobs.end() ? nullptr : &it->second;
}

TaskFrame TrainingJobs::taskFrame(const Lease&) {
    return TaskFrame{[]() -> Expected<net::Message> {
                         return makeError(ErrorCode::Internal, "training jobs lease no tasks");
                     },
                     false};
}

// -- submission and recovery ----------------------------------------------------------------------

void TrainingJobs::submit(const ResearcherRequest& request, net::Message message) {
    asio::post(m_context.workers, [this, request, message = std::move(message)] {
        auto submission = parseTrainSubmission(message, m_limits);
        std::string inputs, params;
        if (submission) {
            std::vector<core::Tensor> current{*submission->inputs[submission->plan.paramsInput]};
            current.insert(current.end(), submission->state.begin(), submission->state.end());
            auto storedInputs = storeTensors(m_context.blobs, valuesOf(submission->inputs));
            auto storedParams = storeTensors(m_context.blobs, current);
            if (!storedInputs || !storedParams)
                submission = makeError(ErrorCode::Internal, "storing the training data failed");
            else {
                inputs = json::serialize(*storedInputs);
                params = json::serialize(*storedParams);
            }
        }
        json::object stored{{"graph", message.control.at("graph")},
                            {"train", message.control.at("train")}};
        asio::post(m_context.core, [this, request, submission = std::move(submission),
                                    inputs = std::move(inputs), params = std::move(params),
                                    stored = json::serialize(stored)]() mutable {
            if (!submission)
                return m_desk.replyError(request.peer, request.requestId, submission.error());
            // Its FLOPs are known once it is planned: over the quota, nothing of it is kept.
            if (auto fits = checkQuota(m_context.store.database(), request.researcherId,
                                       JobSize{0, submission->flops});
                !fits) {
                deleteUnusedBlobs(m_context.store, m_context.blobs, inputs);
                deleteUnusedBlobs(m_context.store, m_context.blobs, params);
                return m_desk.replyError(request.peer, request.requestId, fits.error());
            }
            TrainJobRow row{randomId("t-", m_context.random),
                            request.researcherId,
                            JobState::Running,
                            std::move(stored),
                            std::move(inputs),
                            std::move(params),
                            0,
                            {},
                            {},
                            m_context.clock()};
            if (auto ok = insertTrainJob(m_context.store.database(), row, m_context.clock()); !ok)
                return m_desk.replyError(request.peer, request.requestId,
                                         Error{ErrorCode::Internal, ok.error().message});
            TrainingJob job;
            job.id = row.id;
            job.researcher = row.researcherId;
            job.params = *submission->inputs[submission->plan.paramsInput];
            job.optimizerState = submission->state;
            job.storedParams = row.params;
            job.submission = std::move(*submission);
            TrainingJob& added = m_jobs.emplace(row.id, std::move(job)).first->second;
            m_desk.watch(added.id, request.peer);
            m_context.log(
                "training job " + added.id +
                " accepted: " + std::to_string(added.submission.plan.rounds) + " round(s) of " +
                std::to_string(added.submission.plan.batchSize) + " samples in " +
                std::to_string(added.submission.plan.batchSize / added.submission.plan.microBatch) +
                " micro-batch task(s)" + (added.submission.plan.streamed ? ", data streamed" : ""));
            m_peers.send(request.peer,
                         net::toMessage(net::TrainJobAccepted{request.requestId, added.id,
                                                              added.submission.plan.rounds}));
            m_rounds.start(added);
        });
    });
}

void TrainingJobs::recover() {
    for (const TrainJobRow& row : unreleasedTrainJobs(m_context.store.database())) {
        if (auto resumed = resumeJob(row); !resumed) {
            m_context.log.error("training job " + row.id + " cannot resume (" +
                                resumed.error().message + "); marked failed");
            (void)setTrainJobState(m_context.store.database(), row.id, JobState::Failed,
                                   resumed.error().message, m_context.clock());
        }
    }
    m_late.recover();
}

Expected<void> TrainingJobs::resumeJob(const TrainJobRow& row) {
    json::error_code requestError, inputsError, paramsError;
    json::value request = core::parsePrecise(row.request, requestError);
    json::value inputs = json::parse(row.inputs, inputsError);
    json::value params = json::parse(row.params, paramsError);
    if (requestError || inputsError || paramsError || !request.is_object() || !inputs.is_array() ||
        !params.is_array())
        return makeError(ErrorCode::Internal, "its stored request is malformed");
    auto tensors = loadTensors(m_context.blobs, inputs.get_array());
    auto current = loadTensors(m_context.blobs, params.get_array());
    if (!tensors)
        return tl::unexpected(tensors.error());
    if (!current || current->empty())
        return makeError(ErrorCode::Internal, "its parameters are missing");
    net::Message message{request.get_object(), {}};
    for (core::Tensor& tensor : *tensors)
        message.tensors.push_back(std::make_shared<const core::Tensor>(std::move(tensor)));
    auto submission = parseTrainSubmission(message, m_limits);
    if (!submission)
        return tl::unexpected(submission.error());
    TrainingJob job;
    job.id = row.id;
    job.researcher = row.researcherId;
    job.state = row.state;
    job.roundsDone = row.roundsDone;
    job.roundJob = row.roundJob;
    job.error = row.error;
    job.params = current->front();
    job.optimizerState.assign(current->begin() + 1, current->end());
    job.storedParams = row.params;
    job.submission = std::move(*submission);
    TrainingJob& added = m_jobs.emplace(row.id, std::move(job)).first->second;
    // A round committed just before the crash may have left its graph job unreleased.
    if (const auto last = lastTrainRound(m_context.store.database(), row.id))
        m_graphs.releaseFor(last->graphJob);
    if (added.submission.plan.streamed)
        m_batches.load(added);
    if (added.state != JobState::Running)
        return {};
    if (added.roundsDone >= added.submission.plan.rounds) { // its data ended at the last round
        finishJob(added, false);
        return {};
    }
    m_context.log("training job " + added.id + " resumed after " +
                  std::to_string(added.roundsDone) + " committed round(s)");
    m_rounds.resume(added);
    return {};
}

void TrainingJobs::unload(const std::string& jobId) {
    m_jobs.erase(jobId);
    m_rounds.forget(jobId);
}

void TrainingJobs::finishJob(TrainingJob& job, bool committed) {
    if (job.retraining)
        return m_late.endRetraining(job, {});
    if (!committed) { // its data ended where the next round would have started
        (void)setTrainJobState(m_context.store.database(), job.id, JobState::Done, {},
                               m_context.clock());
        m_desk.reportProgress(job.id, job.roundsDone, job.submission.plan.rounds,
                              ProgressPace::EveryStep);
    }
    job.state = JobState::Done;
    job.waitingForBatch = false;
    m_batches.dropAll(job);
    if (!m_late.keepsForAudits(job)) // else kept for a late catch until its release is due
        m_late.dropSnapshots(job.id);
    m_context.log("training job " + job.id + " done");
    m_desk.deliverToWatchers(job.id, [&](std::uint64_t peer) { deliver(peer, job, 0); });
}

void TrainingJobs::failJob(TrainingJob& job, const Error& error) {
    if (job.state != JobState::Running)
        return;
    m_rounds.end(job, "the job failed: " + error.describe());
    if (job.retraining) { // it stays what it was; its audit says it could not be trained again
        if (!job.roundJob.empty())
            m_graphs.releaseFor(job.roundJob);
        job.roundJob.clear();
        return m_late.endRetraining(job, error.describe());
    }
    job.state = JobState::Failed;
    (void)setTrainJobState(m_context.store.database(), job.id, JobState::Failed, error.describe(),
                           m_context.clock());
    m_context.log.warn("training job " + job.id + " failed: " + error.describe());
    if (!job.roundJob.empty())
        m_graphs.releaseFor(job.roundJob);
    job.error = error.describe();
    job.waitingForBatch = false;
    m_batches.dropAll(job);
    m_late.dropSnapshots(job.id);
    m_desk.reportFailure(job.id, error); // a fetch still gets the rounds committed before it
}

void TrainingJobs::deliver(std::uint64_t peer, const TrainingJob& job, std::int64_t requestId) {
    m_peers.send(peer, net::toMessage(trainJobDone(m_context.store.database(), job, requestId)));
}

// -- the researcher's requests --------------------------------------------------------------------

TrainingJob* TrainingJobs::ownedJob(const ResearcherRequest& request, const std::string& jobId) {
    if (TrainingJob* job = findJob(jobId); job && job->researcher == request.researcherId)
        return job;
    // Released while its data is kept for audits: read back for its fetch or release.
    if (const auto row = trainJob(m_context.store.database(), jobId);
        !findJob(jobId) && row && row->researcherId == request.researcherId)
        if (TrainingJob* loaded = loadRetained(jobId))
            return loaded;
    // Released, or another researcher's: say only what this researcher may know.
    m_desk.replyError(request.peer, request.requestId,
                      Error{ErrorCode::NotFound, "no job " + jobId});
    return nullptr;
}

void TrainingJobs::fetch(const ResearcherRequest& request, const std::string& jobId) {
    TrainingJob* job = ownedJob(request, jobId);
    if (!job)
        return;
    // A failed job is delivered too: the rounds it committed, with its error in the summary.
    m_desk.answerFetch(request.peer,
                       net::JobStatus{request.requestId, jobId,
                                      std::string(jobStateName(researcherState(job->state))),
                                      job->roundsDone, job->submission.plan.rounds},
                       [&] { deliver(request.peer, *job, request.requestId); });
}

void TrainingJobs::release(const ResearcherRequest& request, const std::string& jobId) {
    TrainingJob* job = ownedJob(request, jobId);
    if (!job)
        return;
    Database& db = m_context.store.database();
    if (job->retraining) { // a late catch trains it again: it ends retained, not done
        if (*job->retraining == JobState::Done &&
            setTrainJobState(db, jobId, JobState::Retained, {}, m_context.clock()))
            job->retraining = JobState::Retained;
        m_desk.unwatch(jobId, request.peer);
        m_peers.send(request.peer, net::toMessage(net::Released{request.requestId, jobId}));
        return;
    }
    if (m_desk.refuseRunningRelease(request, jobId, job->state))
        return;
    if (job->state == JobState::Retained ||
        (job->state == JobState::Done && m_late.keepsForAudits(*job))) {
        if (job->state == JobState::Done)
            (void)setTrainJobState(db, jobId, JobState::Retained, {}, m_context.clock());
        m_desk.unwatch(jobId, request.peer);
        unload(jobId);
        m_context.log("training job " + jobId +
                      " released: its data and states are kept for "
                      "the audits of its rounds");
        m_peers.send(request.peer, net::toMessage(net::Released{request.requestId, jobId}));
        return;
    }
    const auto row = trainJob(db, jobId);
    m_late.dropSnapshots(jobId); // none left once it ended, unless a node stopped in between
    (void)setTrainJobState(db, jobId, JobState::Released, {}, m_context.clock());
    if (row) // the data and parameters are deleted unless another job shares a blob
        for (const std::string& stored : {row->inputs, row->params})
            deleteUnusedBlobs(m_context.store, m_context.blobs, stored, jobId);
    m_desk.unwatch(jobId, request.peer);
    unload(jobId);
    m_context.log("training job " + jobId + " released: its data and parameters are deleted");
    m_peers.send(request.peer, net::toMessage(net::Released{request.requestId, jobId}));
}

Expected<void> TrainingJobs::cancel(const std::string& jobId, const std::string& who) {
    TrainingJob* running = findJob(jobId);
    if (!running || running->state != JobState::Running || running->retraining)
        return makeError(ErrorCode::InvalidInput, "training job " + jobId + " is not running");
    TrainingJob& job = *running;
    const Error error = cancelledError(jobId, who);
    if (auto ok = setTrainJobState(m_context.store.database(), jobId, JobState::Cancelled,
                                   error.describe(), m_context.clock());
        !ok)
        return ok;
    job.state = JobState::Cancelled; // a round still stepping on a worker never commits
    job.error = error.describe();
    m_rounds.end(job, "the job was cancelled by " + who);
    if (!job.roundJob.empty())
        m_graphs.dropFor(job.roundJob, who);
    job.roundJob.clear();
    job.waitingForBatch = false;
    m_batches.dropAll(job);
    m_late.dropSnapshots(jobId);
    m_context.log("training job " + jobId + " cancelled by " + who + " after " +
                  std::to_string(job.roundsDone) + " committed round(s)");
    m_desk.reportFailure(jobId, error);
    return {};
}

Expected<void> TrainingJobs::purge(const std::string& jobId) {
    Database& db = m_context.store.database();
    const auto row = trainJob(db, jobId);
    if (!row)
        return makeError(ErrorCode::NotFound, "no job " + jobId);
    if (const TrainingJob* loaded = findJob(jobId);
        row->state == JobState::Running || (loaded && loaded->state == JobState::Running))
        return makeError(ErrorCode::InvalidInput, "training job " + jobId + " is running");
    m_late.dropSnapshots(jobId);
    // Every round it ran: committed, in flight when it ended, or undone by a rewind.
    for (const std::string& graphJob : graphJobsOwnedBy(db, jobId)) {
        // None should still run (the job ended); one that does is cancelled first, the others
        // refuse the cancel and are purged as they stand.
        (void)m_graphs.cancel(graphJob, "the purge of " + jobId);
        if (auto ok = m_graphs.purge(graphJob); !ok && ok.error().code != ErrorCode::NotFound)
            return ok;
    }
    for (const std::string& stored : {row->inputs, row->params})
        deleteUnusedBlobs(m_context.store, m_context.blobs, stored, jobId);
    unload(jobId);
    return purgeJobRows(db, "train", jobId);
}

void TrainingJobs::audit(const ResearcherRequest& request, const std::string& jobId) {
    const auto row = trainJob(m_context.store.database(), jobId);
    if (!row || row->researcherId != request.researcherId)
        return m_desk.replyError(request.peer, request.requestId,
                                 Error{ErrorCode::NotFound, "no job " + jobId});
    m_late.sendReport(jobId, {request.peer}, request.requestId);
}

} // namespace goblin::labnode
