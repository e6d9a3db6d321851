// Tests of the training jobs' durable records (kinds/train/train_store) on a real SQLite file: a
// job recorded reads back as written (running, no round committed); the round in flight's graph
// job is set and cleared; a round's commit writes its record, the new parameters, the next state
// and the count together, so that in a transaction rolled back, or one whose update failed half
// way, nothing of it shows, and another connection sees none of it until the commit and all of it
// after; a round is committed once and only for a job that exists; state changes keep their error
// text; the jobs to load at start-up are the running and ended ones, oldest first; rounds are
// listed in round order, the last being the highest; a streamed job's batches are kept per job in
// batch order and deleted one or all; audit keeping and retention look at the job's own rounds.
#include <QtTest/QtTest>

#include <algorithm>
#include <string>
#include <vector>

#include "kinds/train/rewind_store.hpp"
#include "kinds/train/train_store.hpp"
#include "labnode/store_lab.hpp"

using namespace goblin::labnode;

namespace {

const std::string kJob = "t-1";

// A stored state (as train_jobs.params holds one): its digest is the state's name.
std::string state(const std::string& name) {
    return R"([{"digest":")" + name + R"(","dtype":"f32","shape":[4]}])";
}

TrainJobRow jobRow(const std::string& id, std::int64_t researcher, double createdAt) {
    TrainJobRow row;
    row.id = id;
    row.researcherId = researcher;
    row.request = R"({"graph":{"catalog":3},"train":{"for":")" + id + R"("}})";
    row.inputs = state("inputs-of-" + id);
    row.params = state("start-of-" + id);
    row.createdAt = createdAt;
    return row;
}

// A round's record whose every field differs from the others' and from the defaults.
TrainRoundRow roundRow(std::int64_t round) {
    const double r = static_cast<double>(round);
    TrainRoundRow row;
    row.round = round;
    row.loss = 0.5 + r;
    row.gradNorm = 1.25 + r;
    row.tasks = 4 + round;
    row.rejected = 1 + round;
    row.nodeAudited = 3 + round;
    row.nodeDecided = 2 + round;
    row.seconds = 7.5 + r;
    row.verificationSeconds = 0.125 + r;
    row.graphJob = "g-round-" + std::to_string(round);
    return row;
}

void compareRounds(const TrainRoundRow& got, const TrainRoundRow& want) {
    QCOMPARE(got.round, want.round);
    QCOMPARE(got.loss, want.loss);
    QCOMPARE(got.gradNorm, want.gradNorm);
    QCOMPARE(got.tasks, want.tasks);
    QCOMPARE(got.rejected, want.rejected);
    QCOMPARE(got.nodeAudited, want.nodeAudited);
    QCOMPARE(got.nodeDecided, want.nodeDecided);
    QCOMPARE(got.seconds, want.seconds);
    QCOMPARE(got.verificationSeconds, want.verificationSeconds);
    QCOMPARE(got.graphJob, want.graphJob);
    QCOMPARE(got.redone, std::string()); // never rewound
}

std::vector<std::int64_t> roundNumbers(const std::vector<TrainRoundRow>& rounds) {
    std::vector<std::int64_t> numbers;
    for (const TrainRoundRow& row : rounds)
        numbers.push_back(row.round);
    return numbers;
}

std::vector<std::string> idsOf(const std::vector<TrainJobRow>& jobs) {
    std::vector<std::string> ids;
    for (const TrainJobRow& job : jobs)
        ids.push_back(job.id);
    return ids;
}

// A store on a temporary file with job kJob of one researcher, before its first round.
struct Lab : goblin::labnode::testing::StoreLab {
    Lab() {
        if (researcher == 0 || !insertTrainJob(db, jobRow(kJob, researcher, 1.0), 2.0))
            qFatal("the job could not be stored");
    }
    // Another job of the same researcher.
    bool record(const std::string& id, double createdAt) {
        return insertTrainJob(db, jobRow(id, researcher, createdAt), createdAt).has_value();
    }
    // A graph job in `graphState`, as a round's graph job is once released or kept for audits.
    bool graphJob(const std::string& id, const std::string& graphState) {
        return db
            .execute("INSERT INTO graph_jobs(id, researcher_id, tasks, request, inputs, state, "
                     "created_at) VALUES('" +
                     id + "', " + std::to_string(researcher) + ", 4, '{}', '[]', '" + graphState +
                     "', 1.0)")
            .has_value();
    }
};

} // namespace

class TestTrainStore : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aRecordedJobReadsBackAsWrittenRunningWithNoRound();
    void aJobIsRecordedOnceAndOnlyForAKnownResearcher();
    void theRoundInFlightsGraphJobIsSetAndClearedByItsCommit();
    void aCommittedRoundWritesItsRecordParamsStateAndCountTogether();
    void aRoundRolledBackOrFailingHalfWayLeavesNothingOfIt();
    void anotherConnectionSeesNoneOfARoundUntilItCommitsAndAllOfItAfter();
    void aRoundIsCommittedOnceAndOnlyForAJobThatExists();
    void stateChangesKeepTheirErrorTextAndNothingElse();
    void theJobsToLoadAreTheRunningAndEndedOnesOldestFirst();
    void roundsAreListedInRoundOrderTheLastBeingTheHighest();
    void batchesAreKeptPerJobInBatchOrderAndDeletedOneOrAll();
    void auditKeepingAndRetentionLookAtTheJobsOwnRounds();
};

void TestTrainStore::aRecordedJobReadsBackAsWrittenRunningWithNoRound() {
    Lab lab;
    const TrainJobRow want = jobRow(kJob, lab.researcher, 1.0);
    const auto job = trainJob(lab.db, kJob);
    QVERIFY(job.has_value());
    QCOMPARE(job->id, want.id);
    QCOMPARE(job->researcherId, lab.researcher);
    QCOMPARE(job->request, want.request);
    QCOMPARE(job->inputs, want.inputs);
    QCOMPARE(job->params, want.params);
    QCOMPARE(job->createdAt, want.createdAt);
    QVERIFY(job->state == JobState::Running);
    QCOMPARE(job->roundsDone, std::int64_t{0});
    QCOMPARE(job->roundJob, std::string());
    QCOMPARE(job->error, std::string());
    QVERIFY(trainRounds(lab.db, kJob).empty());
    QVERIFY(!lastTrainRound(lab.db, kJob).has_value());
    QVERIFY(!trainJob(lab.db, "t-unknown").has_value());
}

void TestTrainStore::aJobIsRecordedOnceAndOnlyForAKnownResearcher() {
    Lab lab;
    TrainJobRow again = jobRow(kJob, lab.researcher, 9.0);
    again.params = state("another");
    QVERIFY(!insertTrainJob(lab.db, again, 9.0).has_value());
    QCOMPARE(trainJob(lab.db, kJob)->params, state("start-of-" + kJob)); // the first stands
    QVERIFY(
        !insertTrainJob(lab.db, jobRow("t-stranger", lab.researcher + 100, 3.0), 3.0).has_value());
    QVERIFY(!trainJob(lab.db, "t-stranger").has_value());
}

void TestTrainStore::theRoundInFlightsGraphJobIsSetAndClearedByItsCommit() {
    Lab lab;
    Database& db = lab.db;
    QVERIFY(lab.record("t-2", 3.0));
    QVERIFY(setTrainRoundJob(db, kJob, "g-round-0", 5.0).has_value());
    QCOMPARE(trainJob(db, kJob)->roundJob, std::string("g-round-0"));
    QCOMPARE(trainJob(db, "t-2")->roundJob, std::string()); // the other job's is untouched
    QVERIFY(setTrainRoundJob(db, kJob, "g-round-0b", 6.0).has_value()); // submitted again
    QCOMPARE(trainJob(db, kJob)->roundJob, std::string("g-round-0b"));
    QVERIFY(commitTrainRound(db, kJob, roundRow(0), state("after-0"), JobState::Running, 7.0)
                .has_value());
    QCOMPARE(trainJob(db, kJob)->roundJob, std::string()); // the round committed
    QVERIFY(setTrainRoundJob(db, kJob, "g-round-1", 8.0).has_value());
    QCOMPARE(trainJob(db, kJob)->roundJob, std::string("g-round-1"));
    QVERIFY(setTrainRoundJob(db, kJob, {}, 9.0).has_value()); // cleared without a commit
    QCOMPARE(trainJob(db, kJob)->roundJob, std::string());
    QCOMPARE(trainJob(db, kJob)->roundsDone, std::int64_t{1});
}

void TestTrainStore::aCommittedRoundWritesItsRecordParamsStateAndCountTogether() {
    Lab lab;
    Database& db = lab.db;
    QVERIFY(setTrainRoundJob(db, kJob, "g-round-0", 5.0).has_value());
    QVERIFY(commitTrainRound(db, kJob, roundRow(0), state("after-0"), JobState::Running, 6.0)
                .has_value());
    auto job = trainJob(db, kJob);
    QCOMPARE(job->roundsDone, std::int64_t{1});
    QCOMPARE(job->params, state("after-0"));
    QVERIFY(job->state == JobState::Running);
    auto rounds = trainRounds(db, kJob);
    QCOMPARE(rounds.size(), std::size_t{1});
    compareRounds(rounds[0], roundRow(0));

    // The last round: done, its parameters the job's.
    QVERIFY(
        commitTrainRound(db, kJob, roundRow(1), state("after-1"), JobState::Done, 7.0).has_value());
    job = trainJob(db, kJob);
    QCOMPARE(job->roundsDone, std::int64_t{2});
    QCOMPARE(job->params, state("after-1"));
    QVERIFY(job->state == JobState::Done);
    QCOMPARE(job->request, jobRow(kJob, lab.researcher, 1.0).request); // the rest unchanged
    QCOMPARE(job->inputs, jobRow(kJob, lab.researcher, 1.0).inputs);
    rounds = trainRounds(db, kJob);
    QCOMPARE(rounds.size(), std::size_t{2});
    compareRounds(rounds[0], roundRow(0));
    compareRounds(rounds[1], roundRow(1));
    const auto last = lastTrainRound(db, kJob);
    QVERIFY(last.has_value());
    compareRounds(*last, roundRow(1));
}

void TestTrainStore::aRoundRolledBackOrFailingHalfWayLeavesNothingOfIt() {
    Lab lab;
    Database& db = lab.db;
    QVERIFY(setTrainRoundJob(db, kJob, "g-round-0", 5.0).has_value());
    const auto unchanged = [&] {
        const auto job = trainJob(db, kJob);
        QVERIFY(job.has_value());
        QCOMPARE(job->roundsDone, std::int64_t{0});
        QCOMPARE(job->params, state("start-of-" + kJob));
        QCOMPARE(job->roundJob, std::string("g-round-0"));
        QVERIFY(job->state == JobState::Running);
        QVERIFY(trainRounds(db, kJob).empty());
    };
    {
        auto transaction = Transaction::begin(db);
        QVERIFY(transaction.has_value());
        QVERIFY(commitTrainRound(db, kJob, roundRow(0), state("after-0"), JobState::Done, 6.0)
                    .has_value());
        QCOMPARE(trainJob(db, kJob)->roundsDone, std::int64_t{1}); // seen inside
    }                                                              // never committed: rolled back
    unchanged();
    if (QTest::currentTestFailed())
        return;

    // The job's update fails after the round's row was written: the caller's transaction takes
    // the row back with it.
    QVERIFY(db.execute("CREATE TEMP TRIGGER refuse_job_update BEFORE UPDATE ON train_jobs "
                       "BEGIN SELECT RAISE(ABORT, 'the disk is full'); END")
                .has_value());
    {
        auto transaction = Transaction::begin(db);
        QVERIFY(transaction.has_value());
        const auto committed =
            commitTrainRound(db, kJob, roundRow(0), state("after-0"), JobState::Done, 6.0);
        QVERIFY(!committed.has_value());
        QVERIFY2(committed.error().message.find("the disk is full") != std::string::npos,
                 committed.error().message.c_str());
    }
    QVERIFY(db.execute("DROP TRIGGER refuse_job_update").has_value());
    unchanged();
    if (QTest::currentTestFailed())
        return;

    // And the same round commits whole afterwards.
    auto transaction = Transaction::begin(db);
    QVERIFY(transaction.has_value());
    QVERIFY(commitTrainRound(db, kJob, roundRow(0), state("after-0"), JobState::Running, 7.0)
                .has_value());
    QVERIFY(transaction->commit().has_value());
    QCOMPARE(trainJob(db, kJob)->roundsDone, std::int64_t{1});
    QCOMPARE(trainRounds(db, kJob).size(), std::size_t{1});
}

void TestTrainStore::anotherConnectionSeesNoneOfARoundUntilItCommitsAndAllOfItAfter() {
    Lab lab;
    Database& db = lab.db;
    QVERIFY(setTrainRoundJob(db, kJob, "g-round-0", 5.0).has_value());
    Database reader(db.filename());
    const auto readerSeesNone = [&] {
        const auto job = trainJob(reader, kJob);
        QVERIFY(job.has_value());
        QCOMPARE(job->roundsDone, std::int64_t{0});
        QCOMPARE(job->params, state("start-of-" + kJob));
        QCOMPARE(job->roundJob, std::string("g-round-0"));
        QVERIFY(job->state == JobState::Running);
        QVERIFY(trainRounds(reader, kJob).empty());
    };
    {
        auto transaction = Transaction::begin(db);
        QVERIFY(transaction.has_value());
        QVERIFY(commitTrainRound(db, kJob, roundRow(0), state("after-0"), JobState::Done, 6.0)
                    .has_value());
        readerSeesNone();
        if (QTest::currentTestFailed())
            return;
    }
    readerSeesNone(); // rolled back
    if (QTest::currentTestFailed())
        return;

    auto transaction = Transaction::begin(db);
    QVERIFY(transaction.has_value());
    QVERIFY(
        commitTrainRound(db, kJob, roundRow(0), state("after-0"), JobState::Done, 6.0).has_value());
    readerSeesNone();
    if (QTest::currentTestFailed())
        return;
    QVERIFY(transaction->commit().has_value());
    const auto job = trainJob(reader, kJob);
    QVERIFY(job.has_value());
    QCOMPARE(job->roundsDone, std::int64_t{1});
    QCOMPARE(job->params, state("after-0"));
    QCOMPARE(job->roundJob, std::string());
    QVERIFY(job->state == JobState::Done);
    const auto rounds = trainRounds(reader, kJob);
    QCOMPARE(rounds.size(), std::size_t{1});
    compareRounds(rounds[0], roundRow(0));
}

void TestTrainStore::aRoundIsCommittedOnceAndOnlyForAJobThatExists() {
    Lab lab;
    Database& db = lab.db;
    QVERIFY(commitTrainRound(db, kJob, roundRow(0), state("after-0"), JobState::Running, 6.0)
                .has_value());
    TrainRoundRow twice = roundRow(0);
    twice.loss = 99.0;
    QVERIFY(!commitTrainRound(db, kJob, twice, state("twice"), JobState::Done, 7.0).has_value());
    const auto job = trainJob(db, kJob);
    QCOMPARE(job->roundsDone, std::int64_t{1});
    QCOMPARE(job->params, state("after-0"));
    QVERIFY(job->state == JobState::Running);
    const auto rounds = trainRounds(db, kJob);
    QCOMPARE(rounds.size(), std::size_t{1});
    QCOMPARE(rounds[0].loss, roundRow(0).loss);

    QVERIFY(!commitTrainRound(db, "t-unknown", roundRow(0), state("x"), JobState::Running, 8.0)
                 .has_value());
    QVERIFY(trainRounds(db, "t-unknown").empty());
    QVERIFY(!trainJob(db, "t-unknown").has_value());
}

void TestTrainStore::stateChangesKeepTheirErrorTextAndNothingElse() {
    Lab lab;
    Database& db = lab.db;
    QVERIFY(commitTrainRound(db, kJob, roundRow(0), state("after-0"), JobState::Running, 6.0)
                .has_value());
    QVERIFY(setTrainRoundJob(db, kJob, "g-round-1", 7.0).has_value());
    const std::string why = "invalid_input: round 1: its loss is not finite";
    QVERIFY(setTrainJobState(db, kJob, JobState::Failed, why, 8.0).has_value());
    auto job = trainJob(db, kJob);
    QVERIFY(job->state == JobState::Failed);
    QCOMPARE(job->error, why);
    QCOMPARE(job->roundsDone, std::int64_t{1}); // the committed round stands
    QCOMPARE(job->params, state("after-0"));
    QCOMPARE(job->roundJob, std::string("g-round-1"));
    QCOMPARE(trainRounds(db, kJob).size(), std::size_t{1});

    for (const JobState next : {JobState::Cancelled, JobState::Retained}) {
        const std::string text = "now " + std::string(jobStateName(next));
        QVERIFY(setTrainJobState(db, kJob, next, text, 9.0).has_value());
        job = trainJob(db, kJob);
        QVERIFY(job->state == next);
        QCOMPARE(job->error, text);
    }
    QVERIFY(setTrainJobState(db, kJob, JobState::Done, {}, 10.0).has_value());
    job = trainJob(db, kJob);
    QVERIFY(job->state == JobState::Done);
    QCOMPARE(job->error, std::string()); // a change without a reason clears the last one
}

void TestTrainStore::theJobsToLoadAreTheRunningAndEndedOnesOldestFirst() {
    Lab lab; // kJob, created at 1.0, running
    Database& db = lab.db;
    const std::vector<std::pair<std::string, JobState>> jobs{{"t-failed", JobState::Failed},
                                                             {"t-released", JobState::Released},
                                                             {"t-done", JobState::Done},
                                                             {"t-retained", JobState::Retained},
                                                             {"t-cancelled", JobState::Cancelled}};
    // Created in an order of their own: t-failed last, t-done first.
    const std::vector<double> createdAt{6.0, 4.0, 0.5, 0.25, 3.0};
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        QVERIFY(lab.record(jobs[i].first, createdAt[i]));
        QVERIFY(setTrainJobState(db, jobs[i].first, jobs[i].second, {}, 20.0).has_value());
    }
    QCOMPARE(idsOf(unreleasedTrainJobs(db)),
             (std::vector<std::string>{"t-done", kJob, "t-cancelled", "t-failed"}));
    const auto loaded = unreleasedTrainJobs(db);
    QVERIFY(loaded[0].state == JobState::Done);
    QCOMPARE(loaded[0].params, state("start-of-t-done")); // whole rows
    QCOMPARE(loaded[1].researcherId, lab.researcher);
}

void TestTrainStore::roundsAreListedInRoundOrderTheLastBeingTheHighest() {
    Lab lab;
    Database& db = lab.db;
    QVERIFY(lab.record("t-2", 3.0));
    // A resumed run's rounds continue their count; committed here out of order, so the listing's
    // order is its own.
    for (const std::int64_t round : {7, 5, 9, 6})
        QVERIFY(commitTrainRound(db, kJob, roundRow(round), state("after"), JobState::Running,
                                 10.0 + static_cast<double>(round))
                    .has_value());
    QVERIFY(commitTrainRound(db, "t-2", roundRow(20), state("t-2"), JobState::Running, 30.0)
                .has_value());
    const auto rounds = trainRounds(db, kJob);
    QCOMPARE(roundNumbers(rounds), (std::vector<std::int64_t>{5, 6, 7, 9}));
    for (const TrainRoundRow& row : rounds)
        compareRounds(row, roundRow(row.round));
    QCOMPARE(lastTrainRound(db, kJob)->round, std::int64_t{9});
    QCOMPARE(trainJob(db, kJob)->roundsDone, std::int64_t{4});
    QCOMPARE(roundNumbers(trainRounds(db, "t-2")), (std::vector<std::int64_t>{20}));
    QCOMPARE(lastTrainRound(db, "t-2")->round, std::int64_t{20});
}

void TestTrainStore::batchesAreKeptPerJobInBatchOrderAndDeletedOneOrAll() {
    Lab lab;
    Database& db = lab.db;
    QVERIFY(lab.record("t-2", 3.0));
    QVERIFY(insertTrainBatch(db, kJob, TrainBatchRow{3, state("x3-y3")}).has_value());
    QVERIFY(insertTrainBatch(db, kJob, TrainBatchRow{1, state("x1-y1")}).has_value());
    QVERIFY(insertTrainBatch(db, kJob, TrainBatchRow{4, {}}).has_value()); // the data ended
    QVERIFY(insertTrainBatch(db, kJob, TrainBatchRow{2, state("x2-y2")}).has_value());
    QVERIFY(insertTrainBatch(db, "t-2", TrainBatchRow{1, state("other")}).has_value());
    // A batch is held once; none for a job that does not exist.
    QVERIFY(!insertTrainBatch(db, kJob, TrainBatchRow{2, state("again")}).has_value());
    QVERIFY(!insertTrainBatch(db, "t-unknown", TrainBatchRow{1, state("x")}).has_value());
    QVERIFY(trainBatches(db, "t-unknown").empty());

    const auto listed = [&](const std::string& id) {
        std::vector<std::pair<std::int64_t, std::string>> rows;
        for (const TrainBatchRow& row : trainBatches(db, id))
            rows.emplace_back(row.batch, row.tensors);
        return rows;
    };
    using Rows = std::vector<std::pair<std::int64_t, std::string>>;
    QCOMPARE(
        listed(kJob),
        (Rows{{1, state("x1-y1")}, {2, state("x2-y2")}, {3, state("x3-y3")}, {4, std::string()}}));
    QVERIFY(deleteTrainBatch(db, kJob, 2).has_value());
    QCOMPARE(listed(kJob), (Rows{{1, state("x1-y1")}, {3, state("x3-y3")}, {4, std::string()}}));
    QCOMPARE(listed("t-2"), (Rows{{1, state("other")}})); // another job's batch 1 stays
    QVERIFY(deleteTrainBatch(db, kJob, 1).has_value());
    QCOMPARE(listed("t-2"), (Rows{{1, state("other")}}));
    QVERIFY(deleteTrainBatches(db, kJob).has_value());
    QVERIFY(trainBatches(db, kJob).empty());
    QCOMPARE(listed("t-2"), (Rows{{1, state("other")}}));
}

void TestTrainStore::auditKeepingAndRetentionLookAtTheJobsOwnRounds() {
    Lab lab;
    Database& db = lab.db;
    QVERIFY(lab.record("t-2", 3.0));
    QVERIFY(!anyRoundKeptForAudits(db, kJob)); // no round yet
    QVERIFY(lab.graphJob("g-round-0", "released"));
    QVERIFY(lab.graphJob("g-round-1", "retained"));
    QVERIFY(
        commitTrainRound(db, kJob, roundRow(0), state("a"), JobState::Running, 5.0).has_value());
    QVERIFY(!anyRoundKeptForAudits(db, kJob)); // its only round's data is gone
    QVERIFY(commitTrainRound(db, "t-2", roundRow(1), state("b"), JobState::Done, 5.0).has_value());
    QVERIFY(!anyRoundKeptForAudits(db, kJob)); // another job's round is not its own
    QVERIFY(anyRoundKeptForAudits(db, "t-2"));

    // Retained at 10 (kJob) and at 20 (t-2): due once their last change is before the time asked.
    QVERIFY(setTrainJobState(db, kJob, JobState::Retained, {}, 10.0).has_value());
    QVERIFY(setTrainJobState(db, "t-2", JobState::Retained, {}, 20.0).has_value());
    QVERIFY(retainedTrainJobsDue(db, 10.0).empty());
    QCOMPARE(retainedTrainJobsDue(db, 15.0), std::vector<std::string>{kJob});
    // One trained again after a late catch is not due until that ended.
    QVERIFY(insertLateCatch(db, kJob, LateCatch{"g-round-0", "round 0", false, {}, 0}, 12.0)
                .has_value());
    QCOMPARE(retainedTrainJobsDue(db, 30.0), std::vector<std::string>{"t-2"});
    QVERIFY(endLateCatch(db, kJob, {}, 13.0).has_value());
    auto due = retainedTrainJobsDue(db, 30.0);
    std::sort(due.begin(), due.end());
    QCOMPARE(due, (std::vector<std::string>{kJob, "t-2"}));
    // A job that is not retained is never due, however old.
    QVERIFY(setTrainJobState(db, kJob, JobState::Done, {}, 1.0).has_value());
    QCOMPARE(retainedTrainJobsDue(db, 30.0), std::vector<std::string>{"t-2"});
}

QTEST_APPLESS_MAIN(TestTrainStore)
#include "test_train_store.moc"
