// Tests of a training job's rounds found poisoned after they committed (kinds/train/late_catches)
// on the graph kind's real roles and TrainingRounds, with fake canonical volunteers, a researcher
// on the audit-report protocol and hooks that load, unload and deliver as TrainingJobs does: a
// running job is rewound to a corrected round and trains on to an uninterrupted run's bits; a
// correction of no committed round, or of a failed job's, changes nothing; a done job, or a
// retained one read back for it, is trained again from that round and its researcher gets an
// audit_report with the parameters trained again (the retained job then unloaded); a job whose
// state before the round is gone ends its late catch unverifiable; a retained job due is released
// with its states dropped; a restarted node trains on the job a late catch was training again.
#include <QtTest/QtTest>

#include "goblin/net/messages/researcher_messages.hpp"
#include "kinds/graph/graph_blobs.hpp"
#include "kinds/graph/job_audit_store.hpp"
#include "kinds/train/late_catches.hpp"
#include "kinds/train/rewind_store.hpp"
#include "kinds/train/train_store.hpp"
#include "labnode/kinds/train/graph_roles_rig.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

const std::string kJob = "t-1";

// TrainingRounds and LateCatches on the graph kind's roles (graph_roles_rig.hpp). The hooks
// are TrainingJobs' in small: a job trained again ends its late catch when its rounds end or fail;
// retained jobs are read back from `retained`; unloads and deliveries are recorded.
struct Rig : GraphRoles {
    std::map<std::string, TrainingJob> retained; // what loadRetained reads back
    std::vector<std::string> failures, finished, unloaded, delivered;
    StreamedBatches batches{
        context, peers, desk,
        StreamedBatches::Hooks{[this](const std::string& id) { return find(id); },
                               [this](TrainingJob& job) { rounds.start(job); },
                               [this](TrainingJob& job) { end(job); }}};
    TrainingRounds rounds{
        context,
        peers,
        desk,
        graphs,
        batches,
        TrainingRounds::Hooks{[this](const std::string& id) { return find(id); },
                              [this](TrainingJob& job, const Error& error) {
                                  if (job.state != JobState::Running)
                                      return;
                                  if (job.retraining)
                                      return late.endRetraining(job, error.describe());
                                  job.state = JobState::Failed;
                                  failures.push_back(job.id + ": " + error.message);
                              },
                              [this](TrainingJob& job) { end(job); }}};
    LateCatches late{context,
                     peers,
                     desk,
                     graphs,
                     rounds,
                     LateCatches::Hooks{[this](const std::string& id) { return find(id); },
                                        [this](const std::string& id) -> TrainingJob* {
                                            auto found = retained.find(id);
                                            if (found == retained.end())
                                                return nullptr;
                                            TrainingJob& loaded = jobs[id];
                                            loaded = found->second;
                                            return &loaded;
                                        },
                                        [this](const std::string& id) {
                                            jobs.erase(id);
                                            unloaded.push_back(id);
                                        },
                                        [this](TrainingJob& job) { delivered.push_back(job.id); }}};

    Rig() : Rig(":memory:", {}) {}
    Rig(const std::string& db, const std::string& blobs) : GraphRoles(db, blobs) {}
    ~Rig() { node.workers.join(); } // nothing posts to a unit that is gone

    void end(TrainingJob& job) {
        if (job.retraining)
            return late.endRetraining(job, {});
        job.state = JobState::Done;
        finished.push_back(job.id);
    }

    // Job kJob as TrainingJobs holds it from job_accepted (its rows stored, watched), not started.
    TrainingJob& accept(const TrainData& data) {
        return GraphRoles::accept(kJob, submitTrain(data));
    }
    // kJob read back from its rows as TrainingJobs::resumeJob reads it (after a restart).
    TrainingJob& reload(const TrainData& data) {
        const auto row = trainJob(node.store.database(), kJob);
        auto params =
            row ? loadTensors(node.blobs, row->params)
                : Expected<std::vector<core::Tensor>>(makeError(ErrorCode::NotFound, "no row"));
        auto submission = parseTrainSubmission(submitTrain(data), core::graph::GraphLimits{});
        if (!params || params->empty() || !submission)
            qFatal("the job cannot be read back");
        TrainingJob job;
        job.id = kJob;
        job.researcher = row->researcherId;
        job.state = row->state;
        job.roundsDone = row->roundsDone;
        job.roundJob = row->roundJob;
        job.params = params->front();
        job.storedParams = row->params;
        job.submission = std::move(*submission);
        peers.watch(kJob, kResearcherPeer);
        return jobs.insert_or_assign(kJob, std::move(job)).first->second;
    }
    // kJob trained to its end by honest volunteers.
    TrainingJob& trained(const TrainData& data) {
        TrainingJob& job = accept(data);
        rounds.start(job);
        if (!runUntil([&] { return !finished.empty(); }))
            qFatal("the job did not finish");
        return job;
    }

    std::string groupOf(std::int64_t round) {
        return sql("SELECT graph_job FROM train_rounds WHERE round = " + std::to_string(round));
    }
    // An audit after a quarantine corrected the group (as delivered_audits records it).
    void corrected(const std::string& group) {
        auto id = insertJobAudit(node.store.database(), JobAuditRow{0, group, "v-liar", "caught",
                                                                    "rechecking", 0, 0, 1.0});
        QVERIFY(id && finishJobAudit(node.store.database(), *id, "corrected", 2, 1, 2.0));
    }
    std::optional<net::AuditReport> report() const {
        const auto sent = researcher->sentOfType("audit_report");
        if (sent.size() != 1)
            return std::nullopt;
        auto parsed = net::parseAuditReport(sent[0]);
        if (!parsed)
            return std::nullopt;
        return *parsed;
    }
};

// Trained by honest volunteers without interruption: the final parameters.
std::vector<float> trainedWhole(const TrainData& data) {
    Rig rig;
    return valuesOf(rig.trained(data).params);
}

} // namespace

class TestLateCatches : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aRunningJobIsRewoundToTheCorrectedRoundAndTrainsOnToTheSameBits();
    void aCorrectionOfNoCommittedRoundOrOfAFailedJobChangesNothing();
    void aDoneJobIsTrainedAgainAndItsResearcherGetsTheParametersTrainedAgain();
    void aRetainedJobIsReadBackTrainedAgainAndUnloaded();
    void aJobWhoseStateBeforeTheRoundIsGoneEndsItsLateCatchUnverifiable();
    void aRetainedJobDueIsReleasedWithItsStatesDropped();
    void aRestartedNodeTrainsOnTheJobALateCatchWasTrainingAgain();
};

void TestLateCatches::aRunningJobIsRewoundToTheCorrectedRoundAndTrainsOnToTheSameBits() {
    const TrainData data;
    const std::vector<float> whole = trainedWhole(data);
    Rig rig;
    TrainingJob& job = rig.accept(data);
    rig.rounds.start(job);
    std::vector<float> afterRound0;
    QVERIFY(rig.runUntil([&] {
        if (rig.researcher->count("train_round") == 1 && afterRound0.empty())
            afterRound0 = valuesOf(job.params);
        return rig.researcher->count("train_round") == 2;
    }));
    const std::string group = rig.groupOf(1);
    rig.late.onRoundCorrected(group, "the quarantine of v-liar");
    QCOMPARE(job.rewinds, std::int64_t{1});
    QCOMPARE(job.roundsDone, std::int64_t{1});
    QCOMPARE(valuesOf(job.params), afterRound0);
    QVERIFY(!job.retraining && job.state == JobState::Running);
    QVERIFY(lateCatchesOf(rig.node.store.database(), kJob).empty());
    QVERIFY(rig.runUntil([&] { return !rig.finished.empty(); }));
    QCOMPARE(rig.roundsReported(), (std::vector<std::int64_t>{0, 1, 1, 2}));
    const auto told = rig.researcher->sentOfType("train_round");
    QCOMPARE(told[2].control.at("round").at("redone").as_string(),
             "round 1's graph job " + group + " was corrected after the quarantine of v-liar");
    QCOMPARE(rig.researcher->count("audit_report"), std::size_t{0});
    QVERIFY(rig.delivered.empty());
    QCOMPARE(valuesOf(job.params), whole);
}

void TestLateCatches::aCorrectionOfNoCommittedRoundOrOfAFailedJobChangesNothing() {
    Rig rig;
    TrainingJob& job = rig.accept(TrainData{});
    rig.rounds.start(job);
    QVERIFY(rig.runUntil(
        [&] { return rig.researcher->count("train_round") == 1 && !job.roundJob.empty(); }));
    const std::string inFlight = job.roundJob;
    rig.late.onRoundCorrected(inFlight, "a quarantine"); // not committed
    rig.late.onRoundCorrected("g-unknown", "a quarantine");
    QCOMPARE(job.rewinds, std::int64_t{0});
    QCOMPARE(job.roundJob, inFlight);
    QCOMPARE(rig.sql("SELECT state FROM graph_jobs WHERE id = '" + inFlight + "'"),
             std::string("running"));
    job.state = JobState::Failed; // as a failure leaves it (its round then released)
    rig.late.onRoundCorrected(rig.groupOf(0), "a quarantine");
    QVERIFY(rig.node.logged("the job had failed or was cancelled"));
    QVERIFY(job.state == JobState::Failed && !job.retraining);
    QCOMPARE(job.rewinds, std::int64_t{0});
    QCOMPARE(job.roundsDone, std::int64_t{1});
    QVERIFY(lateCatchesOf(rig.node.store.database(), kJob).empty());
    QCOMPARE(rig.researcher->count("audit_report"), std::size_t{0});
}

void TestLateCatches::aDoneJobIsTrainedAgainAndItsResearcherGetsTheParametersTrainedAgain() {
    const TrainData data;
    Rig rig;
    TrainingJob& job = rig.trained(data);
    const std::vector<float> whole = valuesOf(job.params);
    const std::string group = rig.groupOf(1);
    rig.corrected(group);
    rig.late.onRoundCorrected(group, "the quarantine of v-liar");
    QVERIFY(job.state == JobState::Running && job.retraining == JobState::Done);
    QCOMPARE(job.roundsDone, std::int64_t{1});
    QCOMPARE(jobsRetraining(rig.node.store.database()), std::vector<std::string>{kJob});
    // Meanwhile its rows say done: its rounds commit with the state it returns to.
    QVERIFY(rig.runUntil([&] { return rig.researcher->count("train_round") == 4; }));
    QCOMPARE(rig.sql("SELECT state || ' ' || rounds_done FROM train_jobs"), std::string("done 2"));
    QVERIFY(rig.runUntil([&] { return rig.researcher->count("audit_report") == 1; }));
    QVERIFY(job.state == JobState::Done && !job.retraining);
    QCOMPARE(rig.delivered, std::vector<std::string>{kJob});
    QCOMPARE(rig.roundsReported(), (std::vector<std::int64_t>{0, 1, 2, 1, 2}));
    const auto caught = lateCatchesOf(rig.node.store.database(), kJob);
    QCOMPARE(caught.size(), std::size_t{1});
    QVERIFY(caught[0].ended && caught[0].error.empty());
    QCOMPARE(caught[0].graphJob, group);
    QVERIFY(jobsRetraining(rig.node.store.database()).empty());
    const auto report = rig.report();
    QVERIFY(report.has_value());
    QCOMPARE(report->job, kJob);
    QCOMPARE(report->state, std::string("corrected"));
    QCOMPARE(report->outputs.size(), std::size_t{1});
    QCOMPARE(valuesOf(*report->outputs[0]), valuesOf(job.params));
    QCOMPARE(valuesOf(job.params), whole); // honest rounds again: the same bits
}

void TestLateCatches::aRetainedJobIsReadBackTrainedAgainAndUnloaded() {
    const TrainData data;
    Rig rig;
    TrainingJob& done = rig.trained(data);
    const std::vector<float> whole = valuesOf(done.params);
    QVERIFY(
        setTrainJobState(rig.node.store.database(), kJob, JobState::Retained, {}, rig.node.now));
    TrainingJob released = done;
    released.state = JobState::Retained;
    rig.retained.emplace(kJob, std::move(released));
    rig.jobs.erase(kJob);
    const std::string group = rig.groupOf(0);
    rig.corrected(group);
    rig.late.onRoundCorrected(group, "the quarantine of v-liar");
    QVERIFY(rig.find(kJob) && rig.find(kJob)->retraining == JobState::Retained);
    QCOMPARE(rig.find(kJob)->roundsDone, std::int64_t{0});
    QVERIFY(rig.runUntil([&] { return rig.researcher->count("audit_report") == 1; }));
    QVERIFY(rig.runUntil([&] { return rig.find(kJob) == nullptr; })); // released again
    QCOMPARE(rig.unloaded, std::vector<std::string>{kJob});
    QVERIFY(rig.delivered.empty()); // nobody waits for a released job
    QCOMPARE(rig.sql("SELECT state || ' ' || rounds_done FROM train_jobs"),
             std::string("retained 3"));
    QCOMPARE(rig.roundsReported(), (std::vector<std::int64_t>{0, 1, 2, 0, 1, 2}));
    const auto report = rig.report();
    QVERIFY(report && report->state == "corrected" && report->outputs.size() == 1);
    QCOMPARE(valuesOf(*report->outputs[0]), whole);
}

void TestLateCatches::aJobWhoseStateBeforeTheRoundIsGoneEndsItsLateCatchUnverifiable() {
    Rig rig;
    TrainingJob& job = rig.trained(TrainData{});
    const std::vector<float> params = valuesOf(job.params);
    rig.late.dropSnapshots(kJob);
    QCOMPARE(rig.sql("SELECT count(*) FROM train_snapshots"), std::string("0"));
    const std::string group = rig.groupOf(1);
    rig.corrected(group);
    rig.late.onRoundCorrected(group, "the quarantine of v-liar");
    QVERIFY(job.state == JobState::Done && !job.retraining);
    QCOMPARE(job.roundsDone, kRounds);
    QCOMPARE(valuesOf(job.params), params);
    const auto caught = lateCatchesOf(rig.node.store.database(), kJob);
    QCOMPARE(caught.size(), std::size_t{1});
    QVERIFY(caught[0].ended);
    QCOMPARE(caught[0].error, std::string("the state before round 1 is not kept"));
    const auto report = rig.report();
    QVERIFY(report.has_value());
    QCOMPARE(report->state, std::string("unverifiable"));
    QVERIFY(report->outputs.empty());
    rig.node.poll();
    QCOMPARE(rig.researcher->count("train_round"), std::size_t(kRounds));
    QCOMPARE(rig.sql("SELECT count(*) FROM graph_jobs"), std::string("3"));
    QCOMPARE(rig.sql("SELECT state || ' ' || rounds_done FROM train_jobs"), std::string("done 3"));
}

void TestLateCatches::aRetainedJobDueIsReleasedWithItsStatesDropped() {
    Rig rig;
    TrainingJob& job = rig.trained(TrainData{});
    QVERIFY(rig.late.keepsForAudits(job)); // its rounds' groups keep their data for audits
    QCOMPARE(rig.sql("SELECT count(*) FROM train_snapshots"), std::string("3"));
    QVERIFY(setTrainJobState(rig.node.store.database(), kJob, JobState::Retained, {}, 5000.0));
    job.state = JobState::Retained;
    rig.late.prune(5000.0); // its retention has not passed
    QCOMPARE(rig.sql("SELECT state FROM train_jobs"), std::string("retained"));
    QVERIFY(rig.unloaded.empty());
    rig.late.prune(5001.0);
    QCOMPARE(rig.sql("SELECT state FROM train_jobs"), std::string("released"));
    QCOMPARE(rig.sql("SELECT count(*) FROM train_snapshots"), std::string("0"));
    QCOMPARE(rig.unloaded, std::vector<std::string>{kJob});
    QVERIFY(rig.find(kJob) == nullptr);
}

void TestLateCatches::aRestartedNodeTrainsOnTheJobALateCatchWasTrainingAgain() {
    const TrainData data;
    const std::vector<float> whole = trainedWhole(data);
    const NodeFiles files;
    std::string roundJob;
    {
        Rig rig(files.db, files.blobs);
        TrainingJob& job = rig.trained(data);
        rig.corrected(rig.groupOf(1));
        rig.late.onRoundCorrected(rig.groupOf(1), "the quarantine of v-liar");
        QVERIFY(rig.runUntil([&] { return !job.roundJob.empty(); }, Answer{}));
        roundJob = job.roundJob;
    } // the node stops while round 1 is trained again
    Rig rig(files.db, files.blobs);
    TrainingJob& job = rig.reload(data);
    QVERIFY(job.state == JobState::Done); // as its rows keep it
    QCOMPARE(job.roundsDone, std::int64_t{1});
    rig.late.recover();
    QVERIFY(job.state == JobState::Running && job.retraining == JobState::Done);
    QCOMPARE(job.roundJob, roundJob); // re-attached to the round's group
    QVERIFY(rig.runUntil([&] { return rig.researcher->count("audit_report") == 1; }));
    QVERIFY(job.state == JobState::Done && !job.retraining);
    QCOMPARE(rig.roundsReported(), (std::vector<std::int64_t>{1, 2}));
    QCOMPARE(rig.delivered, std::vector<std::string>{kJob});
    QVERIFY(lateCatchesOf(rig.node.store.database(), kJob).at(0).ended);
    QCOMPARE(rig.report().value_or(net::AuditReport{}).state, std::string("corrected"));
    QCOMPARE(valuesOf(job.params), whole);
}

QTEST_APPLESS_MAIN(TestLateCatches)
#include "test_late_catches.moc"
