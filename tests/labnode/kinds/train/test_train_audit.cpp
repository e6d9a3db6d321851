// Tests of a training job's audit after delivery (kinds/train/train_audit) and the late catches'
// records it reads (kinds/train/rewind_store), on a real SQLite file: a job whose rounds were
// never audited is clean; a committed round corrected but not trained again makes it
// unverifiable; a late catch makes it rechecking while the job is trained again and corrected
// once that ended (unverifiable when it could not); its rounds' graph jobs kept for audits keep
// the job, and a retained job is due for deletion once its retention passed, unless it is being
// trained again or a round's graph job is being rechecked.
#include <QtTest/QtTest>

#include <string>

#include "kinds/graph/job_audit_store.hpp"
#include "kinds/train/rewind_store.hpp"
#include "kinds/train/train_audit.hpp"
#include "kinds/train/train_store.hpp"
#include "labnode/store_lab.hpp"

using namespace goblin::labnode;

namespace {

const std::string kJob = "t-1";

// A store on a temporary file with training job kJob, which committed rounds 0 to 2 as graph jobs
// g-0 to g-2 (retained for audits, as a released round's graph job is).
struct Lab : goblin::labnode::testing::StoreLab {
    Lab() {
        if (researcher == 0 ||
            !insertTrainJob(
                db,
                TrainJobRow{kJob, researcher, JobState::Running, "{}", "[]", "[]", 0, {}, {}, 1.0},
                1.0))
            qFatal("the job could not be stored");
        for (int round = 0; round < 3; ++round) {
            const std::string graphJob = "g-" + std::to_string(round);
            if (!db.execute("INSERT INTO graph_jobs(id, researcher_id, tasks, request, inputs, "
                            "state, created_at) VALUES('" +
                            graphJob + "', " + std::to_string(researcher) +
                            ", 4, '{}', '[]', 'retained', 1.0)"))
                qFatal("the round's graph job could not be stored");
            TrainRoundRow row;
            row.round = round;
            row.tasks = 4;
            row.graphJob = graphJob;
            if (!commitTrainRound(db, kJob, row, "[]",
                                  round == 2 ? JobState::Done : JobState::Running, 2.0 + round))
                qFatal("the round could not be committed");
        }
    }

    // An audit of graph job `graphJob` that ended in `state`.
    void audited(const std::string& graphJob, const std::string& state, double at) {
        auto id = insertJobAudit(
            db, JobAuditRow{0, graphJob, "v-liar", "caught", "rechecking", 0, 0, at});
        QVERIFY(id.has_value());
        QVERIFY(
            finishJobAudit(db, *id, state, 4, state == "corrected" ? 2 : 0, at + 1).has_value());
    }
};

} // namespace

class TestTrainAudit : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void unauditedRoundsAreCleanAndAuditsThatFoundNothingStand();
    void aCorrectedRoundNotTrainedAgainIsUnverifiable();
    void aLateCatchRechecksUntilTheJobIsTrainedAgain();
    void aRetainedJobIsDueOnceItsRetentionPassedUnlessTrainedAgainOrRechecked();
};

void TestTrainAudit::unauditedRoundsAreCleanAndAuditsThatFoundNothingStand() {
    Lab lab;
    auto report = trainAuditReport(lab.db, kJob, 7);
    QCOMPARE(report.id, std::int64_t{7});
    QCOMPARE(report.job, kJob);
    QCOMPARE(report.state, std::string("clean"));
    QVERIFY(report.audits.empty());
    lab.audited("g-1", "stands", 10.0);
    report = trainAuditReport(lab.db, kJob, 0);
    QCOMPARE(report.state, std::string("stands"));
    QCOMPARE(report.audits.size(), std::size_t{1});
    QCOMPARE(report.audits[0].volunteer, std::string("v-liar"));
}

void TestTrainAudit::aCorrectedRoundNotTrainedAgainIsUnverifiable() {
    Lab lab;
    lab.audited("g-0", "stands", 10.0);
    lab.audited("g-2", "corrected", 11.0);
    const auto report = trainAuditReport(lab.db, kJob, 0);
    QCOMPARE(report.state, std::string("unverifiable"));
    QCOMPARE(report.audits.size(), std::size_t{2});
    QCOMPARE(report.audits[1].state, std::string("unverifiable"));
}

void TestTrainAudit::aLateCatchRechecksUntilTheJobIsTrainedAgain() {
    Lab lab;
    Database& db = lab.db;
    QVERIFY(jobsRetraining(db).empty());
    // Round 1 was found poisoned after the job ended: it is trained again from round 1, so rounds
    // 1 and 2 are no longer the job's records.
    lab.audited("g-1", "corrected", 10.0);
    QVERIFY(insertLateCatch(db, kJob, LateCatch{"g-1", "round 1 was corrected", false, {}, 0}, 20.0)
                .has_value());
    QVERIFY(rewindTrainJob(db, kJob, TrainRewind{1, 1, 3, "[]", "round 1 was corrected"}, 20.0)
                .has_value());
    QCOMPARE(jobsRetraining(db), std::vector<std::string>{kJob});
    auto report = trainAuditReport(db, kJob, 0);
    QCOMPARE(report.state, std::string("rechecking"));
    QCOMPARE(report.audits.size(), std::size_t{1});

    QVERIFY(endLateCatch(db, kJob, {}, 30.0).has_value());
    QVERIFY(jobsRetraining(db).empty());
    const auto caught = lateCatchesOf(db, kJob);
    QCOMPARE(caught.size(), std::size_t{1});
    QVERIFY(caught[0].ended && caught[0].error.empty());
    QCOMPARE(caught[0].graphJob, std::string("g-1"));
    report = trainAuditReport(db, kJob, 0);
    QCOMPARE(report.state, std::string("corrected"));
    QCOMPARE(report.audits[0].state, std::string("corrected"));

    // A second late catch that could not train the job again.
    lab.audited("g-0", "corrected", 40.0);
    QVERIFY(insertLateCatch(db, kJob, LateCatch{"g-0", "round 0 was corrected", false, {}, 0}, 41.0)
                .has_value());
    QVERIFY(endLateCatch(db, kJob, "the state before round 0 is not kept", 42.0).has_value());
    report = trainAuditReport(db, kJob, 0);
    QCOMPARE(report.state, std::string("unverifiable"));
    QCOMPARE(lateCatchesOf(db, kJob).back().error,
             std::string("the state before round 0 is not kept"));
}

void TestTrainAudit::aRetainedJobIsDueOnceItsRetentionPassedUnlessTrainedAgainOrRechecked() {
    Lab lab;
    Database& db = lab.db;
    QVERIFY(anyRoundKeptForAudits(db, kJob));
    QVERIFY(db.execute("UPDATE graph_jobs SET state = 'released'"));
    QVERIFY(!anyRoundKeptForAudits(db, kJob));
    QVERIFY(retainedTrainJobsDue(db, 1000.0).empty()); // done, not released
    QVERIFY(setTrainJobState(db, kJob, JobState::Retained, {}, 100.0).has_value());
    QVERIFY(retainedTrainJobsDue(db, 100.0).empty()); // its retention has not passed
    QCOMPARE(retainedTrainJobsDue(db, 101.0), std::vector<std::string>{kJob});
    // A round's graph job being rechecked (a correction there would train the job again).
    auto audit =
        insertJobAudit(db, JobAuditRow{0, "g-1", "v-liar", "caught", "rechecking", 0, 0, 100.5});
    QVERIFY(audit.has_value());
    QVERIFY(retainedTrainJobsDue(db, 1000.0).empty());
    QVERIFY(finishJobAudit(db, *audit, "stands", 4, 0, 100.6).has_value());
    QCOMPARE(retainedTrainJobsDue(db, 101.0), std::vector<std::string>{kJob});
    QVERIFY(
        insertLateCatch(db, kJob, LateCatch{"g-1", "round 1", false, {}, 0}, 102.0).has_value());
    QVERIFY(retainedTrainJobsDue(db, 1000.0).empty()); // trained again now
}

QTEST_APPLESS_MAIN(TestTrainAudit)
#include "test_train_audit.moc"
