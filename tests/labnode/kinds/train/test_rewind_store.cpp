// Tests of the training rewinds' durable records (kinds/train/rewind_store) on a real SQLite file:
// the state before a round is kept once, a rewind drops the records of the rounds undone and the
// states of later rounds (returning them, so their blobs can go), sets the job back to the kept
// state, and every round it undid says why once it is trained again; a round's graph job leads
// back to its training job; the states of an ended job are dropped.
#include <QtTest/QtTest>

#include <string>

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

TrainRoundRow roundRow(std::int64_t round) {
    TrainRoundRow row;
    row.round = round;
    row.loss = 1.0 / static_cast<double>(round + 1);
    row.tasks = 4;
    row.graphJob = "g-round-" + std::to_string(round);
    return row;
}

// A job that committed rounds 0 to `rounds` − 1, its state before each kept as training does.
void train(Database& db, std::int64_t rounds) {
    for (std::int64_t round = 0; round < rounds; ++round) {
        QVERIFY(keepTrainSnapshot(db, kJob, round, state("before-" + std::to_string(round)))
                    .has_value());
        QVERIFY(commitTrainRound(db, kJob, roundRow(round),
                                 state("before-" + std::to_string(round + 1)), JobState::Running,
                                 100.0 + static_cast<double>(round))
                    .has_value());
    }
}

// A store on a temporary file with job kJob of one researcher, before its first round.
struct Lab : goblin::labnode::testing::StoreLab {
    Lab() {
        if (researcher == 0 || !insertTrainJob(db,
                                               TrainJobRow{kJob,
                                                           researcher,
                                                           JobState::Running,
                                                           "{}",
                                                           "[]",
                                                           state("before-0"),
                                                           0,
                                                           {},
                                                           {},
                                                           1.0},
                                               1.0))
            qFatal("the job could not be stored");
    }
};

} // namespace

class TestRewindStore : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void rewindGoesBackToTheKeptStateAndSaysWhy();
    void aStateIsKeptOnceAndDroppedWhenTheJobEnds();
};

void TestRewindStore::rewindGoesBackToTheKeptStateAndSaysWhy() {
    Lab lab;
    Database& db = lab.db;
    train(db, 5);
    const auto ref = trainRoundOfGraphJob(db, "g-round-2");
    QVERIFY(ref.has_value());
    QCOMPARE(ref->jobId, kJob);
    QCOMPARE(ref->round, std::int64_t{2});
    QVERIFY(!trainRoundOfGraphJob(db, "g-other").has_value());

    // Round 2 was poisoned; the job was at round 5.
    const auto snapshot = trainSnapshot(db, kJob, 2);
    QVERIFY(snapshot.has_value());
    QCOMPARE(*snapshot, state("before-2"));
    const std::string why = "round 2's graph job g-round-2 was corrected after v-x was caught";
    auto undone = rewindTrainJob(db, kJob, TrainRewind{2, 2, 5, *snapshot, why}, 200.0);
    QVERIFY(undone.has_value());
    QCOMPARE(undone->size(), std::size_t{2}); // the states before rounds 3 and 4
    QCOMPARE(undone->front(), state("before-3"));
    const auto job = trainJob(db, kJob);
    QVERIFY(job.has_value());
    QCOMPARE(job->roundsDone, std::int64_t{2});
    QCOMPARE(job->params, state("before-2"));
    QCOMPARE(trainRounds(db, kJob).size(), std::size_t{2}); // rounds 0 and 1 stand
    QVERIFY(!trainSnapshot(db, kJob, 3).has_value());
    QVERIFY(trainSnapshot(db, kJob, 2).has_value());

    // Rounds 2 to 4 say why once they are trained again; round 5 was never committed.
    QCOMPARE(whyRedone(db, kJob, 1), std::string());
    QCOMPARE(whyRedone(db, kJob, 2), why);
    QCOMPARE(whyRedone(db, kJob, 4), why);
    QCOMPARE(whyRedone(db, kJob, 5), std::string());
    QVERIFY(commitTrainRound(db, kJob, roundRow(2), state("again-3"), JobState::Running, 300.0)
                .has_value());
    const auto rounds = trainRounds(db, kJob);
    QCOMPARE(rounds.size(), std::size_t{3});
    QCOMPARE(rounds[1].redone, std::string());
    QCOMPARE(rounds[2].redone, why);
}

void TestRewindStore::aStateIsKeptOnceAndDroppedWhenTheJobEnds() {
    Lab lab;
    Database& db = lab.db;
    QVERIFY(keepTrainSnapshot(db, kJob, 0, state("first")).has_value());
    QVERIFY(keepTrainSnapshot(db, kJob, 0, state("second")).has_value()); // a resumed round
    QCOMPARE(*trainSnapshot(db, kJob, 0), state("first"));
    // A kept state holds its blob: another job's release must not delete it.
    QVERIFY(lab.store.blobInUse("first", "t-other"));
    auto dropped = dropTrainSnapshots(db, kJob);
    QVERIFY(dropped.has_value());
    QCOMPARE(dropped->size(), std::size_t{1});
    QVERIFY(!trainSnapshot(db, kJob, 0).has_value());
    QVERIFY(!lab.store.blobInUse("first", "t-other"));
}

QTEST_APPLESS_MAIN(TestRewindStore)
#include "test_rewind_store.moc"
