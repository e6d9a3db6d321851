#include "kinds/train/late_catches.hpp"

#include <boost/asio/post.hpp>

#include "kinds/graph/graph_blobs.hpp"
#include "kinds/train/rewind_store.hpp"
#include "kinds/train/train_audit.hpp"
#include "kinds/train/train_store.hpp"

namespace goblin::labnode {

LateCatches::LateCatches(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk,
                         GraphJobs& graphs, TrainingRounds& rounds, Hooks hooks)
    : m_context(context), m_peers(peers), m_desk(desk), m_graphs(graphs), m_rounds(rounds),
      m_hooks(std::move(hooks)) {}

void LateCatches::recover() {
    // Jobs a late catch was training again (stored done or retained) train on.
    for (const std::string& jobId : jobsRetraining(m_context.store.database())) {
        TrainingJob* job = m_hooks.find(jobId);
        if (!job)
            job = m_hooks.loadRetained(jobId);
        if (!job || job->state == JobState::Running)
            continue;
        job->retraining = job->state;
        job->state = JobState::Running;
        m_context.log("training job " + jobId + " is trained again after a late catch from " +
                      std::to_string(job->roundsDone) + " committed round(s)");
        if (job->roundsDone >= job->submission.plan.rounds)
            endRetraining(*job, {});
        else
            m_rounds.resume(*job);
    }
}

void LateCatches::onRoundCorrected(const std::string& graphJob, const std::string& why) {
    const auto ref = trainRoundOfGraphJob(m_context.store.database(), graphJob);
    if (!ref)
        return; // not a committed round (of a job a rewind moved before it, say)
    TrainingJob* job = m_hooks.find(ref->jobId);
    if (!job)
        job = m_hooks.loadRetained(ref->jobId);
    const std::string corrected = "round " + std::to_string(ref->round) + "'s graph job " +
                                  graphJob + " was corrected after " + why;
    const std::string what = "training job " + ref->jobId + ": " + corrected;
    if (!job || (job->state != JobState::Running && job->state != JobState::Done &&
                 job->state != JobState::Retained))
        return m_context.log.warn(what + "; the job had failed or was cancelled, or its data is "
                                         "deleted, so it is not trained again (its audit reports "
                                         "it unverifiable)");
    if (job->submission.plan.streamed || ref->round >= job->round()) {
        if (job->submission.plan.streamed) // (a streamed job is never retained)
            m_context.log.warn(what + "; a streamed job is not rewound (the batches it trained "
                                      "are gone)");
        if (job->state == JobState::Retained) // read back for this alone
            m_hooks.unload(job->id);
        return; // else undone by an earlier rewind already
    }
    if (job->state == JobState::Running) {
        // Trained again already: this round's correction is one more the job's audit lists.
        if (job->retraining)
            (void)insertLateCatch(m_context.store.database(), job->id,
                                  LateCatch{graphJob, corrected, false, {}, 0}, m_context.clock());
        m_rounds.rewind(*job, ref->round, corrected);
        return;
    }
    retrain(*job, graphJob, ref->round, corrected);
}

void LateCatches::retrain(TrainingJob& job, const std::string& graphJob, std::int64_t round,
                          const std::string& why) {
    Database& db = m_context.store.database();
    const LateCatch caught{graphJob, why, false, {}, 0};
    if (auto ok = insertLateCatch(db, job.id, caught, m_context.clock()); !ok)
        return m_context.log.error("training job " + job.id + ": " + why +
                                   ", but its retraining could not be recorded (" +
                                   ok.error().message + ")");
    m_context.log.warn("training job " + job.id + " had ended (" +
                       std::string(jobStateName(job.state)) + "): " + why +
                       "; it is trained again from round " + std::to_string(round));
    job.retraining = job.state;
    job.state = JobState::Running;
    if (!m_rounds.rewind(job, round, why))
        endRetraining(job, "the state before round " + std::to_string(round) + " is not kept");
}

void LateCatches::endRetraining(TrainingJob& job, const std::string& error) {
    const JobState back = job.retraining.value_or(JobState::Done);
    job.retraining.reset();
    job.state = back;
    Database& db = m_context.store.database();
    if (auto ok = endLateCatch(db, job.id, error, m_context.clock()); !ok)
        m_context.log.error("training job " + job.id + ": the end of its retraining could not " +
                            "be recorded (" + ok.error().message + ")");
    // Its retention counts from now, as its new rounds' graph jobs' does.
    (void)setTrainJobState(db, job.id, back, {}, m_context.clock());
    if (error.empty())
        m_context.log.warn("training job " + job.id + " was trained again after a late catch: " +
                           std::to_string(job.roundsDone) + " round(s), its researcher told");
    else
        m_context.log.error("training job " + job.id + " could not be trained again after a " +
                            "late catch (" + error + "): its audit reports it unverifiable");
    if (back == JobState::Done)
        m_hooks.deliverToWatchers(job);
    sendReport(job.id, m_peers.researcherConnections(job.researcher, kAuditReportProtocol), 0);
    if (back == JobState::Retained) // released: its parameters are read from the store again
        boost::asio::post(m_context.core, [this, id = job.id] {
            if (TrainingJob* loaded = m_hooks.find(id);
                loaded && loaded->state == JobState::Retained)
                m_hooks.unload(id);
        });
}

bool LateCatches::keepsForAudits(const TrainingJob& job) {
    return !job.submission.plan.streamed &&
           anyRoundKeptForAudits(m_context.store.database(), job.id);
}

void LateCatches::sendReport(const std::string& jobId, const std::vector<std::uint64_t>& peers,
                             std::int64_t requestId) {
    if (peers.empty())
        return;
    Database& db = m_context.store.database();
    net::AuditReport report = trainAuditReport(db, jobId, requestId);
    if (report.state == "corrected") { // the parameters and optimizer state as they are now
        const auto row = trainJob(db, jobId);
        auto state = row ? loadTensors(m_context.blobs, row->params)
                         : Expected<std::vector<core::Tensor>>(
                               makeError(ErrorCode::NotFound, "the job's rows are gone"));
        if (!state)
            m_context.log.error("training job " + jobId + ": its parameters cannot be read for " +
                                "its audit report (" + state.error().message + ")");
        else
            for (core::Tensor& tensor : *state)
                report.outputs.push_back(std::make_shared<const core::Tensor>(std::move(tensor)));
    }
    for (std::uint64_t peer : peers)
        m_peers.send(peer, net::toMessage(report));
}

void LateCatches::prune(double endedBefore) {
    Database& db = m_context.store.database();
    for (const std::string& jobId : retainedTrainJobsDue(db, endedBefore)) {
        const auto row = trainJob(db, jobId);
        if (auto ok = setTrainJobState(db, jobId, JobState::Released, {}, m_context.clock()); !ok) {
            m_context.log.error("training job " + jobId + ": could not end its retention (" +
                                ok.error().message + ")");
            continue;
        }
        dropSnapshots(jobId);
        if (row)
            for (const std::string& stored : {row->inputs, row->params})
                deleteUnusedBlobs(m_context.store, m_context.blobs, stored, jobId);
        m_hooks.unload(jobId);
        m_context.log("training job " + jobId + ": its retention for audits ended; data deleted");
    }
}

void LateCatches::dropSnapshots(const std::string& jobId) {
    auto held = dropTrainSnapshots(m_context.store.database(), jobId);
    if (!held)
        return m_context.log.error("training job " + jobId + ": its kept states could not be " +
                                   "dropped (" + held.error().message + ")");
    for (const std::string& stored : *held)
        deleteUnusedBlobs(m_context.store, m_context.blobs, stored);
}

} // namespace goblin::labnode
