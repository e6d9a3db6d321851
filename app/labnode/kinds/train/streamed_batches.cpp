#include "kinds/train/streamed_batches.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include "kinds/graph/graph_blobs.hpp"
#include "kinds/graph/graph_submission.hpp"
#include "kinds/train/train_store.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

Error invalid(const std::string& what) {
    return Error{ErrorCode::InvalidInput, what};
}

} // namespace

StreamedBatches::StreamedBatches(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk,
                                 Hooks hooks)
    : m_context(context), m_peers(peers), m_desk(desk), m_hooks(std::move(hooks)) {}

Expected<void> StreamedBatches::receive(const ResearcherRequest& request, net::TrainBatch batch) {
    TrainingJob* found = m_hooks.find(batch.job);
    if (!found || found->researcher != request.researcherId)
        return makeError(ErrorCode::NotFound, "no job " + batch.job);
    TrainingJob& job = *found;
    const std::string& id = job.id;
    const std::int64_t k = batch.batch;
    const auto accepted = [&] {
        m_peers.send(request.peer, net::toMessage(net::BatchAccepted{request.requestId, id, k}));
    };
    if (!job.submission.plan.streamed)
        return tl::unexpected(invalid("training job " + id +
                                      " took its data whole; it was not "
                                      "submitted with streamed data"));
    if (job.state != JobState::Running)
        return tl::unexpected(invalid("training job " + id + " is " +
                                      std::string(jobStateName(job.state)) +
                                      "; it takes no more data"));
    if (job.dataEnded)
        return tl::unexpected(invalid("the data of training job " + id + " ended before batch " +
                                      std::to_string(job.nextBatch)));
    if (k < job.nextBatch && !batch.end) { // a resend after re-attaching
        // Held or trained already: accepted. Still being stored: answered as the first copy is,
        // once that is durable (or refused).
        if (auto storing = m_storing.find({id, k}); storing != m_storing.end())
            storing->second.push_back(request);
        else
            accepted();
        return {};
    }
    if (k != job.nextBatch)
        return tl::unexpected(invalid("training job " + id + " expects batch " +
                                      std::to_string(job.nextBatch) + ", not batch " +
                                      std::to_string(k)));
    const std::int64_t rounds = job.submission.plan.rounds;
    if (batch.end) {
        if (k < rounds) { // fewer batches than rounds: the job trains k rounds
            if (auto ok = insertTrainBatch(m_context.store.database(), id, TrainBatchRow{k, {}});
                !ok)
                return tl::unexpected(Error{ErrorCode::Internal, ok.error().message});
            job.dataEnded = true;
            job.submission.plan.rounds = k;
            m_context.log("training job " + id + ": its data ended after " + std::to_string(k) +
                          " batch(es); it trains " + std::to_string(k) + " round(s), not " +
                          std::to_string(rounds));
        }
        accepted();
        if (job.waitingForBatch && job.roundsDone >= job.submission.plan.rounds)
            m_hooks.dataEnded(job);
        return {};
    }
    if (k >= rounds)
        return tl::unexpected(invalid("training job " + id + " trains " + std::to_string(rounds) +
                                      " round(s); batch " + std::to_string(k) + " is past them"));
    if (k >= job.roundsDone + net::kStreamedBatchesAhead)
        return makeError(ErrorCode::LimitExceeded,
                         "training job " + id + " holds at most " +
                             std::to_string(net::kStreamedBatchesAhead) + " batches: batch " +
                             std::to_string(k) + " comes after round " +
                             std::to_string(k - net::kStreamedBatchesAhead) + " commits");
    if (auto ok = checkStreamedBatch(job.submission, batch.tensors); !ok)
        return ok;
    job.nextBatch = k + 1; // reserved while a worker stores it
    m_storing[{id, k}];
    asio::post(m_context.workers, [this, request, id, k, tensors = std::move(batch.tensors)] {
        auto stored = storeTensors(m_context.blobs, valuesOf(tensors));
        Expected<std::string> text = stored ? Expected<std::string>(json::serialize(*stored))
                                            : tl::unexpected(stored.error());
        asio::post(m_context.core, [this, request, id, k, text = std::move(text)]() mutable {
            onStored(request, id, k, std::move(text));
        });
    });
    return {};
}

void StreamedBatches::onStored(const ResearcherRequest& request, const std::string& jobId,
                               std::int64_t batch, Expected<std::string> stored) {
    std::vector<ResearcherRequest> asked{request};
    if (auto resends = m_storing.extract({jobId, batch}))
        asked.insert(asked.end(), resends.mapped().begin(), resends.mapped().end());
    TrainingJob* job = m_hooks.find(jobId);
    const bool running = job && job->state == JobState::Running;
    Expected<void> recorded =
        !stored ? makeError(ErrorCode::Internal, "storing batch " + std::to_string(batch) +
                                                     " failed: " + stored.error().message)
        : !running
            ? Expected<void>(tl::unexpected(
                  invalid("training job " + jobId + " no longer runs; it takes no data")))
            : insertTrainBatch(m_context.store.database(), jobId, TrainBatchRow{batch, *stored});
    if (!recorded) {
        if (stored)
            deleteUnusedBlobs(m_context.store, m_context.blobs, *stored);
        if (running && job->nextBatch == batch + 1)
            job->nextBatch = batch; // the researcher may send it again
        m_context.log.warn("training job " + jobId + ": batch " + std::to_string(batch) +
                           " refused (" + recorded.error().message + ")");
        for (const ResearcherRequest& each : asked)
            m_desk.replyError(each.peer, each.requestId, recorded.error());
        return;
    }
    job->batches[batch] = std::move(*stored);
    for (const ResearcherRequest& each : asked)
        m_peers.send(each.peer, net::toMessage(net::BatchAccepted{each.requestId, jobId, batch}));
    if (job->waitingForBatch && job->roundsDone == batch)
        m_hooks.startRound(*job);
}

void StreamedBatches::load(TrainingJob& job) {
    Database& db = m_context.store.database();
    for (const TrainBatchRow& row : trainBatches(db, job.id)) {
        if (row.tensors.empty()) {
            job.dataEnded = true;
            job.nextBatch = row.batch;
            job.submission.plan.rounds = std::min(job.submission.plan.rounds, row.batch);
        } else if (row.batch < job.roundsDone) { // its round committed just before a crash
            (void)deleteTrainBatch(db, job.id, row.batch);
            deleteUnusedBlobs(m_context.store, m_context.blobs, row.tensors);
        } else {
            job.batches[row.batch] = row.tensors;
            job.nextBatch = std::max(job.nextBatch, row.batch + 1);
        }
    }
    // Round r trains batch r: the batch of the round that waits is still to come (batch 0 came
    // with the job).
    job.nextBatch = std::max({job.nextBatch, job.roundsDone, std::int64_t{1}});
    if (job.state != JobState::Running)
        dropAll(job);
}

void StreamedBatches::dropTrained(TrainingJob& job, std::int64_t batch) {
    auto held = job.batches.find(batch);
    if (held == job.batches.end())
        return;
    (void)deleteTrainBatch(m_context.store.database(), job.id, batch);
    deleteUnusedBlobs(m_context.store, m_context.blobs, held->second);
    job.batches.erase(held);
}

void StreamedBatches::dropAll(TrainingJob& job) {
    if (!job.submission.plan.streamed)
        return;
    (void)deleteTrainBatches(m_context.store.database(), job.id);
    for (const auto& [batch, stored] : job.batches)
        deleteUnusedBlobs(m_context.store, m_context.blobs, stored);
    job.batches.clear();
}

} // namespace goblin::labnode
