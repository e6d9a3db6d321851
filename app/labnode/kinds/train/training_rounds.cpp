#include "kinds/train/training_rounds.hpp"

#include <chrono>
#include <memory>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "goblin/net/messages/researcher_messages.hpp"
#include "kinds/graph/graph_blobs.hpp"
#include "kinds/graph/graph_store.hpp"
#include "kinds/train/rewind_store.hpp"
#include "kinds/train/round_step.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;

namespace {

// How long a round that could not commit waits before it tries again.
constexpr std::chrono::seconds kCommitRetry{1};

// A round's graph job failed (its data refused by the node's own computation, say): the job fails
// with the round named.
Error inRound(std::int64_t round, const Error& error) {
    return Error{error.code, "round " + std::to_string(round) + ": " + error.message};
}

} // namespace

TrainingRounds::TrainingRounds(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk,
                               GraphJobs& graphs, StreamedBatches& batches, Hooks hooks)
    : m_context(context), m_peers(peers), m_desk(desk), m_graphs(graphs), m_batches(batches),
      m_hooks(std::move(hooks)), m_steps(graphs.taskEngine()) {}

void TrainingRounds::resume(TrainingJob& job) {
    if (!job.roundJob.empty() && follow(job)) {
        job.roundStarted = m_context.clock();
        return;
    }
    start(job); // the round's graph job is gone (or was never durable): submit it again
}

void TrainingRounds::start(TrainingJob& job) {
    job.roundJob.clear();
    std::vector<core::Tensor> streamed; // the round's batch (batch 0 came with the job)
    if (job.submission.plan.streamed && job.roundsDone > 0) {
        auto held = job.batches.find(job.roundsDone);
        if (held == job.batches.end()) {
            job.waitingForBatch = true;
            m_context.log("training job " + job.id + ": round " + std::to_string(job.round()) +
                          " waits for batch " + std::to_string(job.roundsDone));
            return;
        }
        auto loaded = loadTensors(m_context.blobs, held->second);
        if (!loaded || loaded->size() != 2)
            return m_hooks.fail(
                job, inRound(job.round(),
                             Error{ErrorCode::Internal, "its streamed batch cannot be read"}));
        streamed = std::move(*loaded);
    }
    job.waitingForBatch = false;
    job.roundStarted = m_context.clock();
    // The state before this round, for a rewind to it (a streamed job's trained batches are
    // gone: it is never rewound).
    if (!job.submission.plan.streamed)
        if (auto kept = keepTrainSnapshot(m_context.store.database(), job.id, job.round(),
                                          job.storedParams);
            !kept)
            m_context.log.error("training job " + job.id + ": the state before round " +
                                std::to_string(job.round()) + " could not be kept (" +
                                kept.error().message + "); that round cannot be rewound to");
    auto message = roundMessage(job.submission, job.params, job.round(),
                                streamed.empty() ? nullptr : &streamed);
    if (!message)
        return m_hooks.fail(job, message.error());
    m_graphs.submitFor(
        job.researcher, GroupOwner{job.id, job.round()}, std::move(*message),
        [this, id = job.id, rewinds = job.rewinds](Expected<std::string> graphJob) {
            TrainingJob* found = m_hooks.find(id);
            if (!found || found->state != JobState::Running || found->rewinds != rewinds) {
                // Ended or rewound while the round was taken in: the group is no round of it.
                if (graphJob)
                    m_graphs.dropFor(*graphJob, "training job " + id + ", which moved on");
                return;
            }
            TrainingJob& current = *found;
            if (!graphJob)
                return m_hooks.fail(current, inRound(current.round(), graphJob.error()));
            current.roundJob = *graphJob;
            (void)setTrainRoundJob(m_context.store.database(), id, *graphJob, m_context.clock());
            follow(current);
        });
}

bool TrainingRounds::follow(TrainingJob& job) {
    // The round's step waits on its group's merge (and on the round before's step).
    m_steps.waitOnGroup(job, m_graphs.mergeTaskIdOf(job.roundJob),
                        "round " + std::to_string(job.round()) + " runs as group " + job.roundJob);
    return m_graphs.follow(
        job.roundJob,
        GraphJobFollower{[this, id = job.id](const std::string& graphJob,
                                             const std::vector<core::Tensor>& outputs) {
                             onDone(id, graphJob, outputs);
                         },
                         [this, id = job.id](const std::string& graphJob, const Error& error) {
                             // A round a rewind cancelled is not the job's any more.
                             if (TrainingJob* found = m_hooks.find(id);
                                 found && found->roundJob == graphJob)
                                 m_hooks.fail(*found, inRound(found->round(), error));
                         }});
}

void TrainingRounds::onDone(const std::string& jobId, const std::string& graphJob,
                            const std::vector<core::Tensor>& outputs) {
    TrainingJob* found = m_hooks.find(jobId);
    if (!found || found->state != JobState::Running || found->roundJob != graphJob ||
        !m_steps.take(*found, "its round's group " + graphJob + " is done: the node steps"))
        return; // ended, moved on, or its step is being taken already
    TrainingJob& job = *found;
    const GraphSummaryCounts counts = graphSummaryCounts(m_context.store.database(), graphJob);
    TrainRoundRow record;
    record.round = job.round();
    record.tasks = job.submission.plan.batchSize / job.submission.plan.microBatch;
    record.rejected = counts.rejected;
    record.nodeAudited = counts.audited;
    record.nodeDecided = counts.tiebreaks;
    record.seconds = m_context.clock() - job.roundStarted;
    record.verificationSeconds = m_graphs.verificationSeconds(graphJob);
    record.graphJob = graphJob;
    record.redone = whyRedone(m_context.store.database(), job.id, record.round);
    // The step is O(parameters): a worker takes it on copies, the core thread commits it.
    asio::post(m_context.workers, [this, jobId, plan = job.submission.plan, params = job.params,
                                   state = job.optimizerState, outputs, record,
                                   roundIndex = job.roundsDone, rewinds = job.rewinds]() mutable {
        auto step = takeRoundStep(plan, roundIndex, params, state, outputs, std::move(record),
                                  m_context.blobs);
        asio::post(m_context.core, [this, jobId, rewinds, step = std::move(step)]() mutable {
            commit(jobId, rewinds, std::move(step));
        });
    });
}

void TrainingRounds::commit(const std::string& jobId, std::int64_t rewinds,
                            Expected<RoundStep> step) {
    TrainingJob* found = m_hooks.find(jobId);
    if (!found || found->state != JobState::Running || found->rewinds != rewinds)
        return; // ended, or rewound while this step was taken: it belongs to the rounds undone
    TrainingJob& job = *found;
    const std::string graphJob = job.roundJob;
    if (!step) {
        m_graphs.releaseFor(graphJob);
        return m_hooks.fail(job, step.error());
    }
    const bool last = job.roundsDone + 1 == job.submission.plan.rounds;
    Database& db = m_context.store.database();
    auto transaction = Transaction::begin(db);
    auto committed = transaction ? commitTrainRound(db, job.id, step->record, step->stored,
                                                    job.storedState(last), m_context.clock())
                                 : Expected<void>(tl::unexpected(transaction.error()));
    if (committed)
        committed = transaction->commit();
    if (!committed) {
        // Nothing changed: the round's graph job stays, and a restarted node commits it then.
        // Tried again every second (a full disk does not empty at once), said once.
        if (job.commitRetries++ == 0)
            m_context.log.error("training job " + job.id + ": round " +
                                std::to_string(step->record.round) + " could not commit (" +
                                committed.error().message + "); retrying every second");
        auto timer = std::make_shared<asio::steady_timer>(m_context.core, kCommitRetry);
        timer->async_wait([this, timer, jobId, rewinds,
                           step = std::move(step)](const boost::system::error_code&) mutable {
            commit(jobId, rewinds, std::move(step));
        });
        return;
    }
    if (job.commitRetries > 0)
        m_context.log("training job " + job.id + ": round " + std::to_string(step->record.round) +
                      " committed after " + std::to_string(job.commitRetries) + " retries");
    job.commitRetries = 0;
    // The round before's parameters are deleted unless something still holds them (a graph job
    // kept for audits holds its own inputs).
    deleteUnusedBlobs(m_context.store, m_context.blobs, job.storedParams);
    m_batches.dropTrained(job, job.roundsDone);
    job.storedParams = std::move(step->stored);
    job.params = std::move(step->params);
    job.optimizerState = std::move(step->optimizerState);
    m_steps.decide(job, "round " + std::to_string(step->record.round) + " committed");
    ++job.roundsDone;
    job.roundJob.clear();
    m_graphs.releaseFor(graphJob);
    m_context.log("training job " + job.id + ": round " + std::to_string(step->record.round) +
                  " committed, loss " + std::to_string(step->record.loss));
    for (std::uint64_t peer : m_peers.watchers(job.id))
        m_peers.send(peer, net::toMessage(net::TrainRound{job.id, roundRecordJson(step->record)}));
    m_desk.reportProgress(job.id, job.roundsDone, job.submission.plan.rounds,
                          ProgressPace::EveryStep);
    if (!last)
        return start(job);
    m_hooks.finished(job);
}

bool TrainingRounds::rewind(TrainingJob& job, std::int64_t round, const std::string& why) {
    Database& db = m_context.store.database();
    const std::string what = "training job " + job.id + ": round " + std::to_string(round);
    const auto snapshot = trainSnapshot(db, job.id, round);
    auto state = snapshot ? loadTensors(m_context.blobs, *snapshot)
                          : Expected<std::vector<core::Tensor>>(
                                makeError(ErrorCode::NotFound, "its starting state is not kept"));
    if (!state || state->empty()) {
        m_context.log.error(what + " was found poisoned (" + why + ") but cannot be " +
                            "trained again: " +
                            (state ? std::string("its state is empty") : state.error().message));
        return false;
    }
    const TrainRewind rewind{round, round - job.submission.plan.firstRound, job.round(), *snapshot,
                             why};
    auto transaction = Transaction::begin(db);
    auto written = transaction
                       ? rewindTrainJob(db, job.id, rewind, m_context.clock())
                       : Expected<std::vector<std::string>>(tl::unexpected(transaction.error()));
    if (written)
        if (auto committed = transaction->commit(); !committed)
            written = tl::unexpected(committed.error());
    if (!written) {
        m_context.log.error(what + " was found poisoned (" + why +
                            ") but the rewind could not be recorded (" + written.error().message +
                            ")");
        return false;
    }
    const std::string inFlight = job.roundJob;
    job.roundJob.clear(); // before the cancel: its follower no longer speaks for the job
    if (!inFlight.empty())
        m_graphs.dropFor(inFlight, "a rewind of " + job.id);
    // The later snapshots were states of the rounds undone.
    for (const std::string& undone : *written)
        deleteUnusedBlobs(m_context.store, m_context.blobs, undone);
    m_context.log.warn(what + " was found poisoned (" + why + "): rounds " + std::to_string(round) +
                       " to " + std::to_string(rewind.end - 1) +
                       " are trained again from the state before it");
    m_steps.reopen(job, rewind.roundsDone, why);
    job.params = state->front();
    job.optimizerState.assign(state->begin() + 1, state->end());
    job.storedParams = *snapshot;
    job.roundsDone = rewind.roundsDone;
    job.commitRetries = 0;
    ++job.rewinds;
    m_desk.reportProgress(job.id, job.roundsDone, job.submission.plan.rounds,
                          ProgressPace::EveryStep);
    start(job);
    return true;
}

} // namespace goblin::labnode
