#include "kinds/train/training_jobs.hpp"

#include <cmath>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include "goblin/core/precise_json.hpp"
#include "goblin/net/messages/researcher_messages.hpp"
#include "goblin/plan/tensor_slices.hpp"
#include "kinds/graph/graph_blobs.hpp"
#include "kinds/graph/graph_store.hpp"
#include "kinds/graph/graph_submission.hpp"
#include "node/secrets.hpp"
#include "store/job_purge.hpp"
#include "work/job_control.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;
namespace json = boost::json;

// What a worker made of a round's merged outputs: the record and the new parameters and state,
// stored as blobs; or the error that fails the job.
struct TrainingJobs::Step {
    TrainRoundRow record;
    core::Tensor params;
    std::vector<core::Tensor> optimizerState;
    std::string stored; // the parameters then the state, as stored tensors
};

namespace {

Expected<core::Tensor> copyOf(const core::Tensor& tensor) {
    return plan::sliceAlong(tensor, 0, 0, tensor.shape().at(0));
}

// "nan", "inf", "-inf" or the number, as a researcher reads it.
std::string numberText(double value) {
    if (std::isnan(value))
        return "nan";
    if (std::isinf(value))
        return value > 0 ? "inf" : "-inf";
    return std::to_string(value);
}

// A round's graph job failed (its data refused by the node's own computation, say): the job fails
// with the round named.
Error inRound(std::int64_t round, const Error& error) {
    return Error{error.code, "round " + std::to_string(round) + ": " + error.message};
}

json::object recordJson(const TrainRoundRow& round) {
    return json::object{{"round", round.round},
                        {"loss", round.loss},
                        {"grad_norm", round.gradNorm},
                        {"tasks", round.tasks},
                        {"verified_tasks", round.tasks},
                        {"rejected", round.rejected},
                        {"node_audited", round.nodeAudited},
                        {"node_decided", round.nodeDecided},
                        {"seconds", round.seconds},
                        {"verification_seconds", round.verificationSeconds},
                        {"graph_job", round.graphJob}};
}

// The optimizer step on a worker: copies of the parameters and state, the gradient checked,
// clipped and applied.
Expected<void> applyStep(const TrainPlan& plan, std::int64_t round, std::int64_t roundIndex,
                         core::Tensor& grad, core::Tensor& params, std::vector<core::Tensor>& state,
                         TrainRoundRow& record) {
    for (float value : grad.values<float>())
        if (!std::isfinite(value))
            return makeError(ErrorCode::InvalidInput, "round " + std::to_string(round) +
                                                          ": a gradient is not finite (the "
                                                          "loss is " +
                                                          numberText(record.loss) +
                                                          "); nothing was applied");
    record.gradNorm = plan.clipGradNorm ? clipGradNorm(grad, *plan.clipGradNorm) : gradNorm(grad);
    const double lr = plan.learningRates.at(static_cast<std::size_t>(roundIndex));
    return optimizerStep(plan.optimizer, lr, round + 1, params, grad, state);
}

} // namespace

TrainingJobs::TrainingJobs(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk,
                           GraphJobs& graphs, core::graph::GraphLimits limits)
    : m_context(context), m_peers(peers), m_desk(desk), m_graphs(graphs), m_limits(limits) {}

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
            Job job;
            job.id = row.id;
            job.researcher = row.researcherId;
            job.params = *submission->inputs[submission->plan.paramsInput];
            job.optimizerState = submission->state;
            job.storedParams = row.params;
            job.submission = std::move(*submission);
            Job& added = m_jobs.emplace(row.id, std::move(job)).first->second;
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
            startRound(added);
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
    Job job;
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
    Job& added = m_jobs.emplace(row.id, std::move(job)).first->second;
    // A round committed just before the crash may have left its graph job unreleased.
    if (const auto last = lastTrainRound(m_context.store.database(), row.id))
        m_graphs.releaseFor(last->graphJob);
    if (added.submission.plan.streamed)
        loadBatches(added);
    if (added.state != JobState::Running)
        return {};
    if (added.roundsDone >= added.submission.plan.rounds) { // its data ended at the last round
        finishJob(added, false);
        return {};
    }
    m_context.log("training job " + added.id + " resumed after " +
                  std::to_string(added.roundsDone) + " committed round(s)");
    if (!added.roundJob.empty() &&
        m_graphs.follow(
            added.roundJob,
            GraphJobFollower{
                [this, id = added.id](const std::string& graphJob, const auto& outputs) {
                    onRoundDone(id, graphJob, outputs);
                },
                [this, id = added.id](const std::string&, const Error& error) {
                    if (auto it = m_jobs.find(id); it != m_jobs.end())
                        failJob(it->second, inRound(round(it->second), error));
                }})) {
        added.roundStarted = m_context.clock();
        return {};
    }
    startRound(added); // the round's graph job is gone (or was never durable): submit it again
    return {};
}

// -- rounds ---------------------------------------------------------------------------------------

void TrainingJobs::startRound(Job& job) {
    job.roundJob.clear();
    std::vector<core::Tensor> streamed; // the round's batch (batch 0 came with the job)
    if (job.submission.plan.streamed && job.roundsDone > 0) {
        auto held = job.batches.find(job.roundsDone);
        if (held == job.batches.end()) {
            job.waitingForBatch = true;
            m_context.log("training job " + job.id + ": round " + std::to_string(round(job)) +
                          " waits for batch " + std::to_string(job.roundsDone));
            return;
        }
        json::error_code error;
        const json::value stored = json::parse(held->second, error);
        auto loaded = error || !stored.is_array()
                          ? Expected<std::vector<core::Tensor>>(
                                makeError(ErrorCode::Internal, "its record is malformed"))
                          : loadTensors(m_context.blobs, stored.get_array());
        if (!loaded || loaded->size() != 2)
            return failJob(job, inRound(round(job), Error{ErrorCode::Internal,
                                                          "its streamed batch cannot be read"}));
        streamed = std::move(*loaded);
    }
    job.waitingForBatch = false;
    job.roundStarted = m_context.clock();
    auto message = roundMessage(job.submission, job.params, round(job),
                                streamed.empty() ? nullptr : &streamed);
    if (!message)
        return failJob(job, message.error());
    m_graphs.submitFor(
        job.researcher, std::move(*message), [this, id = job.id](Expected<std::string> graphJob) {
            auto it = m_jobs.find(id);
            if (it == m_jobs.end() || it->second.state != JobState::Running)
                return;
            Job& current = it->second;
            if (!graphJob)
                return failJob(current, inRound(round(current), graphJob.error()));
            current.roundJob = *graphJob;
            (void)setTrainRoundJob(m_context.store.database(), id, *graphJob, m_context.clock());
            followRound(current);
        });
}

void TrainingJobs::followRound(Job& job) {
    m_graphs.follow(job.roundJob,
                    GraphJobFollower{[this, id = job.id](const std::string& graphJob,
                                                         const std::vector<core::Tensor>& outputs) {
                                         onRoundDone(id, graphJob, outputs);
                                     },
                                     [this, id = job.id](const std::string&, const Error& error) {
                                         if (auto it = m_jobs.find(id); it != m_jobs.end())
                                             failJob(it->second, inRound(round(it->second), error));
                                     }});
}

void TrainingJobs::onRoundDone(const std::string& jobId, const std::string& graphJob,
                               const std::vector<core::Tensor>& outputs) {
    auto it = m_jobs.find(jobId);
    if (it == m_jobs.end() || it->second.state != JobState::Running || it->second.stepping ||
        it->second.roundJob != graphJob)
        return;
    Job& job = it->second;
    job.stepping = true;
    const GraphSummaryCounts counts = graphSummaryCounts(m_context.store.database(), graphJob);
    TrainRoundRow record;
    record.round = round(job);
    record.tasks = job.submission.plan.batchSize / job.submission.plan.microBatch;
    record.rejected = counts.rejected;
    record.nodeAudited = counts.audited;
    record.nodeDecided = counts.tiebreaks;
    record.seconds = m_context.clock() - job.roundStarted;
    record.verificationSeconds = m_graphs.verificationSeconds(graphJob);
    record.graphJob = graphJob;
    // The step is O(parameters): a worker takes it on copies, the core thread commits it.
    asio::post(m_context.workers, [this, jobId, plan = job.submission.plan, params = job.params,
                                   state = job.optimizerState, outputs, record,
                                   roundIndex = job.roundsDone]() mutable {
        auto step = [&]() -> Expected<Step> {
            if (outputs.size() != 2)
                return makeError(ErrorCode::Internal, "a round's job has two outputs");
            Step result;
            result.record = record;
            result.record.loss = static_cast<double>(outputs[0].values<float>()[0]);
            if (!std::isfinite(result.record.loss))
                return makeError(ErrorCode::InvalidInput,
                                 "round " + std::to_string(record.round) + ": the loss is " +
                                     numberText(result.record.loss) + "; nothing was applied");
            auto grad = copyOf(outputs[1]);
            auto newParams = copyOf(params);
            if (!grad || !newParams)
                return makeError(ErrorCode::Internal, "no memory for the optimizer step");
            for (const core::Tensor& buffer : state) {
                auto copy = copyOf(buffer);
                if (!copy)
                    return tl::unexpected(copy.error());
                result.optimizerState.push_back(std::move(*copy));
            }
            if (auto ok = applyStep(plan, record.round, roundIndex, *grad, *newParams,
                                    result.optimizerState, result.record);
                !ok)
                return tl::unexpected(ok.error());
            result.params = std::move(*newParams);
            std::vector<core::Tensor> current{result.params};
            current.insert(current.end(), result.optimizerState.begin(),
                           result.optimizerState.end());
            auto stored = storeTensors(m_context.blobs, current);
            if (!stored)
                return makeError(ErrorCode::Internal, "storing the parameters failed");
            result.stored = json::serialize(*stored);
            return result;
        }();
        asio::post(m_context.core, [this, jobId, step = std::move(step)]() mutable {
            commitRound(jobId, std::move(step));
        });
    });
}

void TrainingJobs::commitRound(const std::string& jobId, Expected<Step> step) {
    auto it = m_jobs.find(jobId);
    if (it == m_jobs.end() || it->second.state != JobState::Running)
        return;
    Job& job = it->second;
    job.stepping = false;
    const std::string graphJob = job.roundJob;
    if (!step) {
        m_graphs.releaseFor(graphJob);
        return failJob(job, step.error());
    }
    const bool last = job.roundsDone + 1 == job.submission.plan.rounds;
    Database& db = m_context.store.database();
    auto transaction = Transaction::begin(db);
    auto committed =
        transaction ? commitTrainRound(db, job.id, step->record, step->stored,
                                       last ? JobState::Done : JobState::Running, m_context.clock())
                    : Expected<void>(tl::unexpected(transaction.error()));
    if (committed)
        committed = transaction->commit();
    if (!committed) {
        // Nothing changed: the round's graph job stays, and a restarted node commits it then.
        m_context.log.error("training job " + job.id + ": round " +
                            std::to_string(step->record.round) + " could not commit (" +
                            committed.error().message + "); retrying");
        job.stepping = true;
        asio::post(m_context.core, [this, jobId, step = std::move(step)]() mutable {
            commitRound(jobId, std::move(step));
        });
        return;
    }
    // The round before's parameters are deleted unless something still holds them (a graph job
    // kept for audits holds its own inputs).
    deleteUnusedBlobs(job.storedParams);
    dropTrainedBatch(job, job.roundsDone);
    job.storedParams = std::move(step->stored);
    job.params = std::move(step->params);
    job.optimizerState = std::move(step->optimizerState);
    ++job.roundsDone;
    job.roundJob.clear();
    m_graphs.releaseFor(graphJob);
    m_context.log("training job " + job.id + ": round " + std::to_string(step->record.round) +
                  " committed, loss " + std::to_string(step->record.loss));
    for (std::uint64_t peer : m_peers.watchers(job.id))
        m_peers.send(peer, net::toMessage(net::TrainRound{job.id, recordJson(step->record)}));
    m_desk.reportProgress(job.id, job.roundsDone, job.submission.plan.rounds,
                          ProgressPace::EveryStep);
    if (!last)
        return startRound(job);
    finishJob(job, true);
}

void TrainingJobs::finishJob(Job& job, bool committed) {
    if (!committed) { // its data ended where the next round would have started
        (void)setTrainJobState(m_context.store.database(), job.id, JobState::Done, {},
                               m_context.clock());
        m_desk.reportProgress(job.id, job.roundsDone, job.submission.plan.rounds,
                              ProgressPace::EveryStep);
    }
    job.state = JobState::Done;
    job.waitingForBatch = false;
    dropBatches(job);
    m_context.log("training job " + job.id + " done");
    m_desk.deliverToWatchers(job.id, [&](std::uint64_t peer) { deliver(peer, job, 0); });
}

void TrainingJobs::failJob(Job& job, const Error& error) {
    if (job.state != JobState::Running)
        return;
    job.state = JobState::Failed;
    (void)setTrainJobState(m_context.store.database(), job.id, JobState::Failed, error.describe(),
                           m_context.clock());
    m_context.log.warn("training job " + job.id + " failed: " + error.describe());
    if (!job.roundJob.empty())
        m_graphs.releaseFor(job.roundJob);
    job.error = error.describe();
    job.waitingForBatch = false;
    dropBatches(job);
    m_desk.reportFailure(job.id, error); // a fetch still gets the rounds committed before it
}

void TrainingJobs::deliver(std::uint64_t peer, const Job& job, std::int64_t requestId) {
    json::array history;
    for (const TrainRoundRow& round : trainRounds(m_context.store.database(), job.id))
        history.push_back(recordJson(round));
    json::object summary{{"kind", "train"},
                         {"state", jobStateName(job.state)},
                         {"rounds", job.roundsDone},
                         {"first_round", job.submission.plan.firstRound},
                         {"optimizer_state", job.optimizerState.size()},
                         {"history", std::move(history)}};
    if (job.state == JobState::Failed || job.state == JobState::Cancelled)
        summary["error"] = job.error;
    std::vector<net::TensorPtr> tensors{std::make_shared<const core::Tensor>(job.params)};
    for (const core::Tensor& buffer : job.optimizerState)
        tensors.push_back(std::make_shared<const core::Tensor>(buffer));
    m_peers.send(peer, net::toMessage(net::JobDone{requestId, job.id, std::move(summary),
                                                   std::move(tensors)}));
}

// -- the researcher's requests --------------------------------------------------------------------

TrainingJobs::Job* TrainingJobs::ownedJob(const ResearcherRequest& request,
                                          const std::string& jobId) {
    if (auto it = m_jobs.find(jobId);
        it != m_jobs.end() && it->second.researcher == request.researcherId)
        return &it->second;
    // Released, or another researcher's: say only what this researcher may know.
    m_desk.replyError(request.peer, request.requestId,
                      Error{ErrorCode::NotFound, "no job " + jobId});
    return nullptr;
}

void TrainingJobs::fetch(const ResearcherRequest& request, const std::string& jobId) {
    Job* job = ownedJob(request, jobId);
    if (!job)
        return;
    // A failed job is delivered too: the rounds it committed, with its error in the summary.
    m_desk.answerFetch(request.peer,
                       net::JobStatus{request.requestId, jobId,
                                      std::string(jobStateName(job->state)), job->roundsDone,
                                      job->submission.plan.rounds},
                       [&] { deliver(request.peer, *job, request.requestId); });
}

void TrainingJobs::release(const ResearcherRequest& request, const std::string& jobId) {
    Job* job = ownedJob(request, jobId);
    if (!job)
        return;
    if (m_desk.refuseRunningRelease(request, jobId, job->state))
        return;
    Database& db = m_context.store.database();
    const auto row = trainJob(db, jobId);
    (void)setTrainJobState(db, jobId, JobState::Released, {}, m_context.clock());
    if (row) // the data and parameters are deleted unless another job shares a blob
        for (const std::string& stored : {row->inputs, row->params})
            for (const std::string& digest : storedDigests(stored))
                if (!m_context.store.blobInUse(digest, jobId))
                    m_context.blobs.remove(digest);
    m_desk.unwatch(jobId, request.peer);
    m_jobs.erase(jobId);
    m_context.log("training job " + jobId + " released: its data and parameters are deleted");
    m_peers.send(request.peer, net::toMessage(net::Released{request.requestId, jobId}));
}

Expected<void> TrainingJobs::cancel(const std::string& jobId, const std::string& who) {
    auto it = m_jobs.find(jobId);
    if (it == m_jobs.end() || it->second.state != JobState::Running)
        return makeError(ErrorCode::InvalidInput, "training job " + jobId + " is not running");
    Job& job = it->second;
    const Error error = cancelledError(jobId, who);
    if (auto ok = setTrainJobState(m_context.store.database(), jobId, JobState::Cancelled,
                                   error.describe(), m_context.clock());
        !ok)
        return ok;
    job.state = JobState::Cancelled; // a round still stepping on a worker never commits
    job.error = error.describe();
    if (!job.roundJob.empty())
        if (auto ok = m_graphs.cancel(job.roundJob, who); !ok)
            m_graphs.releaseFor(job.roundJob); // it had finished: its outputs go unused
    job.roundJob.clear();
    job.waitingForBatch = false;
    dropBatches(job);
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
    if (row->state == JobState::Running)
        return makeError(ErrorCode::InvalidInput, "training job " + jobId + " is running");
    std::vector<std::string> graphJobs;
    for (const TrainRoundRow& round : trainRounds(db, jobId))
        graphJobs.push_back(round.graphJob);
    if (!row->roundJob.empty()) // the round in flight when it failed or was cancelled
        graphJobs.push_back(row->roundJob);
    for (const std::string& graphJob : graphJobs)
        if (auto ok = m_graphs.purge(graphJob); !ok && ok.error().code != ErrorCode::NotFound)
            return ok;
    for (const std::string& stored : {row->inputs, row->params})
        for (const std::string& digest : storedDigests(stored))
            if (!m_context.store.blobInUse(digest, jobId))
                m_context.blobs.remove(digest);
    m_jobs.erase(jobId);
    return purgeJobRows(db, "train", jobId);
}

void TrainingJobs::audit(const ResearcherRequest& request, const std::string& jobId) {
    m_desk.replyError(request.peer, request.requestId,
                      Error{ErrorCode::InvalidInput,
                            "a training job has no audit of its own: audit its rounds' graph "
                            "jobs (history[].graph_job) for " +
                                jobId});
}

} // namespace goblin::labnode
