// Tests of a training job's rounds (kinds/train/training_rounds) on the graph kind's real roles
// (GraphJobs, scheduler, verdict path, trust) as the Coordinator wires them, with fake canonical
// volunteers, a researcher watching the job and hooks that keep the jobs here: each round is a
// group owned by the job and commits (record, state kept before it, train_round to watchers)
// before the next starts, deciding the round's step task, which waits on the round before's; a
// round whose loss is not finite fails the job naming it with nothing applied; a commit that fails
// is tried again every second, said once, and commits once; a rewind to a kept round restores the
// state before it, drops the round in flight, reopens the round's step task and trains the later
// rounds again to the same bits, and one to a round whose state is not kept changes nothing; a
// streamed round waits for its batch and an unreadable one fails the job; resume re-attaches to the
// round's loaded group or starts the round again.
#include <QtTest/QtTest>

#include <algorithm>

#include "kinds/graph/graph_blobs.hpp"
#include "kinds/train/rewind_store.hpp"
#include "kinds/train/train_store.hpp"
#include "kinds/train/training_rounds.hpp"
#include "labnode/kinds/train/graph_roles_rig.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

// TrainingRounds on the graph kind's roles (graph_roles_rig.hpp); the hooks find the jobs kept
// there and record failures and ends as TrainingJobs would.
struct Rig : GraphRoles {
    std::vector<std::string> failures, finished; // "job: error", and job ids
    StreamedBatches batches{
        context, peers, desk,
        StreamedBatches::Hooks{[this](const std::string& id) { return find(id); },
                               [this](TrainingJob& job) { rounds.start(job); },
                               [this](TrainingJob& job) { end(job); }}};
    TrainingRounds rounds{context,
                          peers,
                          desk,
                          graphs,
                          batches,
                          TrainingRounds::Hooks{[this](const std::string& id) { return find(id); },
                                                [this](TrainingJob& job, const Error& error) {
                                                    if (job.state != JobState::Running)
                                                        return;
                                                    job.state = JobState::Failed;
                                                    failures.push_back(job.id + ": " +
                                                                       error.message);
                                                },
                                                [this](TrainingJob& job) { end(job); }}};

    Rig() : Rig(":memory:", {}) {}
    Rig(const std::string& db, const std::string& blobs) : GraphRoles(db, blobs) {}
    ~Rig() { node.workers.join(); } // nothing posts to a unit that is gone

    void end(TrainingJob& job) {
        job.state = JobState::Done;
        finished.push_back(job.id);
    }

    TrainingJob& start(const std::string& id, const TrainData& data) {
        TrainingJob& job = accept(id, submitTrain(data));
        rounds.start(job);
        return job;
    }

    std::size_t reported() const { return researcher->count("train_round"); }
    // The job's groups as "round:state", by round then creation.
    std::string groups(const std::string& id) {
        return sql(
            "SELECT group_concat(owner_round || ':' || state, ' ') FROM (SELECT owner_round, "
            "state FROM graph_jobs WHERE owner_job = '" +
            id + "' ORDER BY owner_round, rowid)");
    }
};

// Trained by honest volunteers without interruption: the final parameters (empty on a deadline).
std::vector<float> trainedWhole(const TrainData& data) {
    Rig rig;
    TrainingJob& job = rig.start("t-whole", data);
    if (!rig.runUntil([&] { return !rig.finished.empty(); }))
        return {};
    return valuesOf(job.params);
}

// Samples 8…15 (round 1's batch) with targets so far from x·w that the squared residual
// overflows float32: the loss of round 1 is +inf as any honest volunteer computes it.
TrainData overflowingSecondBatch() {
    TrainData data;
    auto y = data.y.values<float>();
    for (std::int64_t i = kBatch; i < kSamples; ++i)
        y[std::size_t(i)] = 1e30f;
    return data;
}

} // namespace

class TestTrainingRounds : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void eachRoundIsAGroupOfTheJobCommittedAndToldToWatchersBeforeTheNext();
    void aRoundWhoseLossIsNotFiniteFailsTheJobNamingItWithNothingApplied();
    void aCommitThatFailsIsRetriedAndCommitsOnce();
    void aRewindToAKeptRoundRestoresItsStateAndTrainsTheLaterRoundsAgain();
    void aRewindToARoundWhoseStateIsNotKeptChangesNothing();
    void aStreamedRoundWaitsForItsBatchAndAnUnreadableOneFailsTheJob();
    void resumeReattachesToTheLoadedRoundOrStartsItAgain();
};

void TestTrainingRounds::eachRoundIsAGroupOfTheJobCommittedAndToldToWatchersBeforeTheNext() {
    const TrainData data;
    Rig rig;
    TrainingJob& job = rig.start("t-1", data);
    // Before its group is taken in, the state before round 0 is kept and no round is committed.
    QCOMPARE(rig.sql("SELECT count(*) FROM train_snapshots WHERE round = 0"), std::string("1"));
    QVERIFY(rig.runUntil([&] { return !rig.finished.empty(); }));
    QCOMPARE(rig.finished, std::vector<std::string>{"t-1"});
    QVERIFY(rig.failures.empty());
    QCOMPARE(job.roundsDone, kRounds);
    QVERIFY(job.roundJob.empty() && !rig.rounds.stepping(job));
    // Each round's step was a task of the job the node decided, after the round before's and
    // after its group's merge (a task of the graph kind on the same engine): the merge's
    // decision is what queued it.
    const std::vector<const Task*> steps = rig.rounds.steps(job);
    QCOMPARE(steps.size(), std::size_t(kRounds));
    for (std::size_t round = 0; round < steps.size(); ++round) {
        const Task& step = *steps[round];
        QCOMPARE(step.state, TaskState::Decided);
        QCOMPARE(step.job, std::string("t-1"));
        QCOMPARE(step.dependencies.size(), round > 0 ? std::size_t{2} : std::size_t{1});
        if (round > 0)
            QCOMPARE(step.dependencies.front(), steps[round - 1]->id);
        const std::int64_t merge = step.dependencies.back();
        QVERIFY(merge < 0 && merge != step.id);
        const auto said = [&](const std::string& cause) {
            return std::any_of(step.story.begin(), step.story.end(),
                               [&](const Transition& t) { return t.cause.starts_with(cause); });
        };
        QVERIFY(said("round " + std::to_string(round) + " runs as group "));
        QVERIFY(said("its last dependency, task " + std::to_string(merge) + ", was decided"));
    }
    // One group per round, owned by the job, each released once its round committed.
    const std::string groups = rig.groups("t-1");
    QVERIFY2(groups == "0:retained 1:retained 2:retained" ||
                 groups == "0:released 1:released 2:released",
             groups.c_str());
    QCOMPARE(rig.sql("SELECT count(*) FROM graph_jobs"), std::string("3"));
    // train_round per commit, in order, naming the round's group as its record does.
    QCOMPARE(rig.roundsReported(), (std::vector<std::int64_t>{0, 1, 2}));
    for (const auto& message : rig.researcher->sentOfType("train_round")) {
        const auto round = message.control.at("round").at("round").to_number<std::int64_t>();
        const std::string group(message.control.at("round").at("graph_job").as_string());
        QCOMPARE(rig.sql("SELECT owner_round FROM graph_jobs WHERE id = '" + group + "'"),
                 std::to_string(round));
        QCOMPARE(
            rig.sql("SELECT graph_job FROM train_rounds WHERE round = " + std::to_string(round)),
            group);
    }
    QCOMPARE(rig.sql("SELECT state || ' ' || rounds_done FROM train_jobs"), std::string("done 3"));
    QCOMPARE(rig.sql("SELECT group_concat(round) FROM train_snapshots"), std::string("0,1,2"));
    const Float64Run want = sgdInFloat64(data, kRounds);
    double most = 0;
    for (std::size_t i = 0; i < std::size_t(kDim); ++i)
        most = std::max(most, std::abs(double(job.params.values<float>()[i]) - want.params[i]));
    QVERIFY2(most <= want.bound, std::to_string(most).c_str());
}

void TestTrainingRounds::aRoundWhoseLossIsNotFiniteFailsTheJobNamingItWithNothingApplied() {
    Rig rig;
    TrainingJob& job = rig.start("t-1", overflowingSecondBatch());
    std::vector<float> afterRound0;
    QVERIFY(rig.runUntil([&] {
        if (rig.reported() == 1 && afterRound0.empty())
            afterRound0 = valuesOf(job.params);
        return !rig.failures.empty();
    }));
    QCOMPARE(rig.failures.size(), std::size_t{1});
    QVERIFY2(rig.failures[0].starts_with("t-1: round 1: the loss is "), rig.failures[0].c_str());
    QVERIFY2(rig.failures[0].find("nothing was applied") != std::string::npos,
             rig.failures[0].c_str());
    QCOMPARE(job.roundsDone, std::int64_t{1});
    QCOMPARE(valuesOf(job.params), afterRound0);
    QCOMPARE(rig.reported(), std::size_t{1});
    QCOMPARE(rig.sql("SELECT count(*) || ' ' || max(round) FROM train_rounds"), std::string("1 0"));
    QCOMPARE(rig.sql("SELECT rounds_done FROM train_jobs"), std::string("1"));
    QVERIFY(rig.finished.empty());
    // Round 1's group is not left running.
    QVERIFY(rig.runUntil([&] { return rig.groups("t-1").find("running") == std::string::npos; }));
}

void TestTrainingRounds::aCommitThatFailsIsRetriedAndCommitsOnce() {
    const TrainData data;
    const std::vector<float> whole = trainedWhole(data);
    QCOMPARE(whole.size(), std::size_t(kDim));
    Rig rig;
    Database& db = rig.node.store.database();
    QVERIFY(db.execute("CREATE TEMP TRIGGER refuse_rounds BEFORE INSERT ON train_rounds "
                       "BEGIN SELECT RAISE(ABORT, 'the disk is full'); END"));
    TrainingJob& job = rig.start("t-1", data);
    QVERIFY(rig.runUntil([&] { return rig.node.logged("round 0 could not commit"); }));
    // Tried again every second, not at once over and over: nothing is applied meanwhile, and the
    // failure is said once.
    const std::size_t before = rig.node.logLines("could not commit");
    QVERIFY(rig.runUntil([&] { return job.commitRetries >= 3; }));
    QCOMPARE(rig.node.logLines("could not commit"), before);
    QCOMPARE(job.roundsDone, std::int64_t{0});
    QVERIFY(rig.rounds.stepping(job));
    QCOMPARE(rig.reported(), std::size_t{0});
    QCOMPARE(rig.sql("SELECT count(*) FROM train_rounds"), std::string("0"));
    QCOMPARE(rig.sql("SELECT rounds_done FROM train_jobs"), std::string("0"));
    QCOMPARE(rig.groups("t-1"), std::string("0:done")); // its outputs kept, not released
    QVERIFY(db.execute("DROP TRIGGER refuse_rounds"));
    QVERIFY(rig.runUntil([&] { return !rig.finished.empty(); }));
    QVERIFY(rig.node.logged("training job t-1: round 0 committed after"));
    QCOMPARE(rig.roundsReported(), (std::vector<std::int64_t>{0, 1, 2}));
    QCOMPARE(rig.sql("SELECT group_concat(round) FROM train_rounds"), std::string("0,1,2"));
    QCOMPARE(rig.sql("SELECT count(*) FROM graph_jobs"), std::string("3"));
    QCOMPARE(valuesOf(job.params), whole);
}

void TestTrainingRounds::aRewindToAKeptRoundRestoresItsStateAndTrainsTheLaterRoundsAgain() {
    const TrainData data;
    const std::vector<float> whole = trainedWhole(data);
    QCOMPARE(whole.size(), std::size_t(kDim));
    Rig rig;
    TrainingJob& job = rig.start("t-1", data);
    std::vector<float> afterRound0;
    QVERIFY(rig.runUntil([&] {
        if (rig.reported() == 1 && afterRound0.empty())
            afterRound0 = valuesOf(job.params);
        return rig.reported() == 2; // round 2 is being taken in or runs
    }));
    const std::string why = "round 1's graph job was corrected";
    QVERIFY(rig.rounds.rewind(job, 1, why));
    QCOMPARE(valuesOf(job.params), afterRound0);
    QCOMPARE(job.roundsDone, std::int64_t{1});
    QCOMPARE(job.rewinds, std::int64_t{1});
    // Round 1's step is queued again, round 2's waits again (the engine's reopen).
    const std::vector<const Task*> steps = rig.rounds.steps(job);
    QCOMPARE(steps.size(), std::size_t{3});
    QCOMPARE(steps[0]->state, TaskState::Decided);
    QCOMPARE(steps[1]->state, TaskState::Queued);
    QCOMPARE(steps[1]->story.back().cause, why);
    QCOMPARE(steps[2]->state, TaskState::Waiting);
    QCOMPARE(rig.sql("SELECT group_concat(round) FROM train_rounds"), std::string("0"));
    QCOMPARE(rig.sql("SELECT rounds_done FROM train_jobs"), std::string("1"));
    QCOMPARE(rig.sql("SELECT count(*) FROM train_snapshots WHERE round = 2"), std::string("0"));
    QVERIFY(rig.runUntil([&] { return !rig.finished.empty(); }));
    QVERIFY(rig.failures.empty());
    QCOMPARE(rig.roundsReported(), (std::vector<std::int64_t>{0, 1, 1, 2}));
    // The round trained again says why; round 1 before it and round 2 (never committed) do not.
    const auto told = rig.researcher->sentOfType("train_round");
    for (std::size_t i : {std::size_t{1}, std::size_t{3}})
        QVERIFY(!told[i].control.at("round").as_object().contains("redone"));
    QCOMPARE(told[2].control.at("round").at("redone").as_string(), why);
    // The same three step tasks, each decided once more after the rewind.
    const std::vector<const Task*> stepsAfter = rig.rounds.steps(job);
    QCOMPARE(stepsAfter.size(), std::size_t{3});
    for (std::size_t round = 0; round < 3; ++round) {
        QCOMPARE(stepsAfter[round]->id, steps[round]->id);
        QCOMPARE(stepsAfter[round]->state, TaskState::Decided);
    }
    // Round 2's first group was dropped (taken in or running), the others released.
    const std::string groups = rig.groups("t-1");
    QVERIFY2(groups == "0:retained 1:retained 1:retained 2:cancelled 2:retained", groups.c_str());
    QCOMPARE(valuesOf(job.params), whole);
}

void TestTrainingRounds::aRewindToARoundWhoseStateIsNotKeptChangesNothing() {
    Rig rig;
    TrainingJob& job = rig.start("t-1", TrainData{});
    QVERIFY(rig.runUntil([&] { return rig.reported() == 1 && !job.roundJob.empty(); }));
    const std::vector<float> params = valuesOf(job.params);
    const std::string roundJob = job.roundJob, stored = job.storedParams;
    QVERIFY(!rig.rounds.rewind(job, 2, "round 2 was corrected")); // not started yet
    QVERIFY(rig.node.logged("round 2 was found poisoned (round 2 was corrected) but cannot be "
                            "trained again"));
    QCOMPARE(valuesOf(job.params), params);
    QCOMPARE(job.roundsDone, std::int64_t{1});
    QCOMPARE(job.rewinds, std::int64_t{0});
    QCOMPARE(job.roundJob, roundJob);
    QCOMPARE(job.storedParams, stored);
    QCOMPARE(rig.sql("SELECT count(*) FROM train_rewinds"), std::string("0"));
    QCOMPARE(rig.groups("t-1"), std::string("0:retained 1:running"));
    // A streamed job keeps no state before its rounds: never rewound.
    Rig streamed;
    TrainingJob& flowing = streamed.accept("t-2", submitTrain(TrainData{}, true));
    streamed.rounds.start(flowing);
    QVERIFY(streamed.runUntil([&] { return streamed.reported() == 1; }));
    QVERIFY(!streamed.rounds.rewind(flowing, 0, "round 0 was corrected"));
    QCOMPARE(flowing.roundsDone, std::int64_t{1});
    QVERIFY(flowing.waitingForBatch);
    // The first job trains on untouched.
    QVERIFY(rig.runUntil([&] { return !rig.finished.empty(); }));
    QCOMPARE(rig.roundsReported(), (std::vector<std::int64_t>{0, 1, 2}));
}

void TestTrainingRounds::aStreamedRoundWaitsForItsBatchAndAnUnreadableOneFailsTheJob() {
    const TrainData data;
    Rig rig;
    TrainingJob& job = rig.accept("t-1", submitTrain(data, true));
    job.roundsDone = 1; // round 0 trained the batch that came with the job
    rig.rounds.start(job);
    QVERIFY(job.waitingForBatch);
    QVERIFY(rig.node.logged("training job t-1: round 1 waits for batch 1"));
    rig.node.poll();
    QCOMPARE(rig.sql("SELECT count(*) FROM graph_jobs"), std::string("0"));
    QVERIFY(rig.failures.empty());
    // Its batch came: the round is a group on it.
    auto stored = storeTensors(rig.node.blobs,
                               {rowsOf(data.x, kBatch, kBatch), rowsOf(data.y, kBatch, kBatch)});
    QVERIFY(stored.has_value());
    job.batches[1] = boost::json::serialize(*stored);
    rig.rounds.start(job);
    QVERIFY(!job.waitingForBatch);
    QVERIFY(rig.runUntil([&] { return !job.roundJob.empty(); }, Answer{})); // stays in flight
    QCOMPARE(rig.groups("t-1"), std::string("1:running"));
    // A batch that cannot be read fails the job naming the round.
    TrainingJob& other = rig.accept("t-2", submitTrain(data, true));
    other.roundsDone = 1;
    other.batches[1] = "[]";
    rig.rounds.start(other);
    QCOMPARE(rig.failures,
             std::vector<std::string>{"t-2: round 1: its streamed batch cannot be read"});
    QCOMPARE(rig.sql("SELECT count(*) FROM graph_jobs WHERE owner_job = 't-2'"), std::string("0"));
}

void TestTrainingRounds::resumeReattachesToTheLoadedRoundOrStartsItAgain() {
    const TrainData data;
    const std::vector<float> whole = trainedWhole(data);
    QCOMPARE(whole.size(), std::size_t(kDim));
    const NodeFiles files;
    std::string roundJob;
    {
        Rig rig(files.db, files.blobs);
        TrainingJob& job = rig.start("t-1", data);
        QVERIFY(rig.runUntil([&] { return rig.reported() == 1 && !job.roundJob.empty(); }));
        roundJob = job.roundJob;
    } // the node stops with round 1's group durable and running
    Rig rig(files.db, files.blobs);
    const auto row = trainJob(rig.node.store.database(), "t-1");
    QVERIFY(row.has_value());
    QCOMPARE(row->roundJob, roundJob);
    auto params = loadTensors(rig.node.blobs, row->params);
    QVERIFY(params && params->size() == 1);
    TrainingJob& job = rig.accept("t-2", submitTrain(data)); // (a job to start again, below)
    TrainingJob resumed = job;
    resumed.id = "t-1";
    resumed.params = params->front();
    resumed.storedParams = row->params;
    resumed.roundsDone = row->roundsDone;
    resumed.roundJob = row->roundJob;
    TrainingJob& loaded = rig.jobs.insert_or_assign("t-1", std::move(resumed)).first->second;
    rig.peers.watch("t-1", kResearcherPeer);
    rig.rounds.resume(loaded);
    QCOMPARE(loaded.roundJob, roundJob); // re-attached: no other group submitted
    // A round whose group is not loaded (never durable) starts again.
    job.roundJob = "g-not-loaded";
    rig.rounds.resume(job);
    QVERIFY(rig.runUntil([&] { return rig.finished.size() == 2; }));
    QCOMPARE(rig.groups("t-1"), std::string("0:retained 1:retained 2:retained"));
    QCOMPARE(rig.sql("SELECT graph_job FROM train_rounds WHERE job_id = 't-1' AND round = 1"),
             roundJob);
    QCOMPARE(rig.groups("t-2"), std::string("0:retained 1:retained 2:retained"));
    QCOMPARE(valuesOf(loaded.params), whole);
    QCOMPARE(valuesOf(job.params), whole);
}

QTEST_APPLESS_MAIN(TestTrainingRounds)
#include "test_training_rounds.moc"
