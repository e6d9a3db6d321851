// Tests of the durable leases (store/lease_store) on a real SQLite file: an attempt of a task of a
// kind is leased once, even after a restart, while the same task id under another kind is another
// task; a restarted node continues past each kind's highest attempt; a batch of leases whose
// transaction fails records none; lost leases keep their volunteer, reason and time across a
// reopen, oldest first, once per attempt; and only losses of tasks whose own job ended are
// forgotten.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kinds/graph/graph_store.hpp"
#include "store/lease_store.hpp"
#include "store/node_store.hpp"

using namespace goblin::labnode;

namespace {

// A node's store on a file that survives closing it, as a restart sees it.
struct Lab {
    QTemporaryDir dir;
    std::unique_ptr<NodeStore> store = std::make_unique<NodeStore>(path());
    std::int64_t researcher = store->addResearcher("ada@lab.example", "hash").value_or(0);

    std::string path() const { return dir.filePath("node.db").toStdString(); }
    Database& db() { return store->database(); }
    void reopen() {
        store.reset(); // closed first: the reopened store reads only what reached the file
        store = std::make_unique<NodeStore>(path());
    }

    std::int64_t count(const std::string& sql) {
        auto query = db().prepare(sql);
        return query.step().value_or(false) ? query.columnInt(0) : -1;
    }
    std::string text(const std::string& sql) {
        auto query = db().prepare(sql);
        return query.step().value_or(false) ? query.columnText(0) : std::string("(no row)");
    }

    // A matmul job `id` in `state` with one tile; the tile's task id (-1 on failure).
    std::int64_t tileJob(const std::string& id, JobState state) {
        JobRecord job;
        job.id = id;
        job.researcherId = researcher;
        job.m = job.k = job.n = 2;
        job.tileRows = job.tileCols = 2;
        job.aBlob = "a-" + id;
        job.bBlob = "b-" + id;
        job.state = state;
        job.createdAt = 1.0;
        if (!store->insertJob(job))
            return -1;
        return store->insertTask(id, TileRecord{0, 0, 0, 2, 2, false, 0}).value_or(-1);
    }
    // A graph job `id` in `state` with one task; the task's id (-1 on failure).
    std::int64_t graphJob(const std::string& id, JobState state) {
        const GraphJobRow row{id, researcher, state, 1, R"({"graph": {}})", "[]", 1.0, {}};
        if (!insertGraphJob(db(), row)) // stored running, whatever row.state says
            return -1;
        const std::int64_t task = insertGraphTask(db(), id, 0).value_or(-1);
        if (state != JobState::Running && !setGraphJobState(db(), id, state, 2.0))
            return -1;
        return task;
    }
};

LeaseRecord lease(const std::string& kind, std::int64_t task, std::int64_t attempt,
                  const std::string& volunteer, double at) {
    return LeaseRecord{kind, task, attempt, volunteer, at, at + 120.0};
}

LeaseLossRecord loss(const std::string& kind, std::int64_t task, std::int64_t attempt,
                     const std::string& volunteer, LeaseLoss why, double at) {
    return LeaseLossRecord{kind, task, attempt, volunteer, why, at};
}

} // namespace

class TestLeaseStore : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void anAttemptIsLeasedOnceEvenAfterARestart();
    void theSameTaskIdUnderAnotherKindIsAnotherTask();
    void aRestartedNodeContinuesPastEachKindsHighestAttempt();
    void aBatchWhoseTransactionFailsLeasesNone();
    void lostLeasesReloadWithTheirReasonOldestFirst();
    void anAttemptIsLostOnceAndKeepsItsFirstReason();
    void aLossWithAnUnknownReasonIsSkipped();
    void reasonsAreStoredByTheirNames();
    void onlyLossesOfTasksWhoseOwnJobEndedAreForgotten();
};

void TestLeaseStore::anAttemptIsLeasedOnceEvenAfterARestart() {
    Lab lab;
    QVERIFY(recordLease(lab.db(), lease("graph", 7, 1, "v-1", 10.0)).has_value());
    // A replay of the same attempt, whoever holds it, is refused by the database.
    QVERIFY(!recordLease(lab.db(), lease("graph", 7, 1, "v-2", 20.0)).has_value());
    lab.reopen();
    QVERIFY(!recordLease(lab.db(), lease("graph", 7, 1, "v-1", 30.0)).has_value());
    QCOMPARE(lab.count("SELECT count(*) FROM task_leases"), std::int64_t{1});
    // The first lease stays as it was written.
    QCOMPARE(lab.text("SELECT volunteer_id FROM task_leases"), std::string("v-1"));
    auto row = lab.db().prepare("SELECT leased_at, deadline FROM task_leases");
    QVERIFY(row.step().value_or(false));
    QCOMPARE(row.columnDouble(0), 10.0);
    QCOMPARE(row.columnDouble(1), 130.0);
    // The next attempt is a new lease.
    QVERIFY(recordLease(lab.db(), lease("graph", 7, 2, "v-2", 40.0)).has_value());
    QCOMPARE(lab.count("SELECT count(*) FROM task_leases WHERE task_id = 7"), std::int64_t{2});
}

void TestLeaseStore::theSameTaskIdUnderAnotherKindIsAnotherTask() {
    Lab lab;
    // Tiles and graph tasks are numbered in their own tables: id 1 exists in both.
    QVERIFY(recordLease(lab.db(), lease("matmul", 1, 1, "v-1", 10.0)).has_value());
    QVERIFY(recordLease(lab.db(), lease("graph", 1, 1, "v-2", 11.0)).has_value());
    QVERIFY(recordLease(lab.db(), lease("pipeline", 1, 1, "v-3", 12.0)).has_value());
    QCOMPARE(lab.count("SELECT count(*) FROM task_leases WHERE task_id = 1 AND attempt = 1"),
             std::int64_t{3});
    QCOMPARE(lab.text("SELECT volunteer_id FROM task_leases WHERE kind = 'matmul'"),
             std::string("v-1"));
    QCOMPARE(lab.text("SELECT volunteer_id FROM task_leases WHERE kind = 'graph'"),
             std::string("v-2"));
    QCOMPARE(lab.text("SELECT volunteer_id FROM task_leases WHERE kind = 'pipeline'"),
             std::string("v-3"));
    // Each kind still refuses its own attempt twice.
    QVERIFY(!recordLease(lab.db(), lease("matmul", 1, 1, "v-2", 13.0)).has_value());
    QVERIFY(!recordLease(lab.db(), lease("graph", 1, 1, "v-1", 13.0)).has_value());
}

void TestLeaseStore::aRestartedNodeContinuesPastEachKindsHighestAttempt() {
    Lab lab;
    const std::int64_t tile = lab.tileJob("j-1", JobState::Running);
    const std::int64_t graphTask = lab.graphJob("g-1", JobState::Running);
    QVERIFY(tile > 0);
    QCOMPARE(graphTask, tile); // the same id in both kinds: neither may read the other's leases
    // Recorded out of order: the highest attempt counts, not the last one written.
    for (std::int64_t attempt : {3, 1, 2})
        QVERIFY(recordLease(lab.db(), lease("matmul", tile, attempt, "v-1", 10.0 * attempt))
                    .has_value());
    for (std::int64_t attempt : {5, 4})
        QVERIFY(recordLease(lab.db(), lease("graph", graphTask, attempt, "v-2", 10.0 * attempt))
                    .has_value());
    lab.reopen();
    const auto tiles = lab.store->tilesOf("j-1");
    QCOMPARE(tiles.size(), std::size_t{1});
    QCOMPARE(tiles[0].attempt, std::int64_t{3});
    const auto graphTasks = graphTasksOf(lab.db(), "g-1");
    QCOMPARE(graphTasks.size(), std::size_t{1});
    QCOMPARE(graphTasks[0].lastAttempt, std::int64_t{5});
    // The attempt after the highest is free; every one at or below it stays taken.
    QVERIFY(recordLease(lab.db(), lease("matmul", tile, 4, "v-3", 60.0)).has_value());
    for (std::int64_t attempt : {1, 2, 3})
        QVERIFY(!recordLease(lab.db(), lease("matmul", tile, attempt, "v-3", 61.0)).has_value());
    QCOMPARE(lab.store->tilesOf("j-1")[0].attempt, std::int64_t{4});
}

void TestLeaseStore::aBatchWhoseTransactionFailsLeasesNone() {
    Lab lab;
    QVERIFY(recordLease(lab.db(), lease("matmul", 2, 1, "v-1", 10.0)).has_value());
    {
        // As the scheduler records a pump's leases: one transaction, dropped on the first refusal.
        auto transaction = Transaction::begin(lab.db());
        QVERIFY(transaction.has_value());
        QVERIFY(recordLease(lab.db(), lease("matmul", 1, 1, "v-2", 20.0)).has_value());
        QVERIFY(recordLease(lab.db(), lease("graph", 5, 1, "v-2", 20.0)).has_value());
        QVERIFY(!recordLease(lab.db(), lease("matmul", 2, 1, "v-2", 20.0)).has_value());
    }
    QCOMPARE(lab.count("SELECT count(*) FROM task_leases"), std::int64_t{1});
    {
        auto transaction = Transaction::begin(lab.db());
        QVERIFY(transaction.has_value());
        QVERIFY(recordLease(lab.db(), lease("matmul", 1, 1, "v-3", 30.0)).has_value());
        QVERIFY(recordLease(lab.db(), lease("graph", 5, 1, "v-3", 30.0)).has_value());
        QVERIFY(transaction->commit().has_value());
    }
    lab.reopen();
    QCOMPARE(lab.count("SELECT count(*) FROM task_leases"), std::int64_t{3});
    QCOMPARE(lab.text("SELECT volunteer_id FROM task_leases WHERE kind = 'graph' AND task_id = 5"),
             std::string("v-3"));
}

void TestLeaseStore::lostLeasesReloadWithTheirReasonOldestFirst() {
    Lab lab;
    // Written out of time order; two at the same time keep the order they were written in.
    QVERIFY(recordLeaseLoss(lab.db(), loss("graph", 4, 2, "v-2", LeaseLoss::TaskError, 30.5)));
    QVERIFY(recordLeaseLoss(lab.db(), loss("matmul", 9, 1, "v-1", LeaseLoss::Expired, 10.25)));
    QVERIFY(recordLeaseLoss(lab.db(), loss("graph", 4, 3, "v-3", LeaseLoss::NotSent, 40.0)));
    QVERIFY(recordLeaseLoss(lab.db(), loss("matmul", 8, 1, "v-1", LeaseLoss::Disconnected, 40.0)));
    lab.reopen();
    const auto losses = leaseLosses(lab.db());
    QCOMPARE(losses.size(), std::size_t{4});
    const std::vector<std::string> kinds{"matmul", "graph", "graph", "matmul"};
    const std::vector<std::int64_t> tasks{9, 4, 4, 8};
    const std::vector<std::int64_t> attempts{1, 2, 3, 1};
    const std::vector<std::string> volunteers{"v-1", "v-2", "v-3", "v-1"};
    const std::vector<LeaseLoss> whys{LeaseLoss::Expired, LeaseLoss::TaskError, LeaseLoss::NotSent,
                                      LeaseLoss::Disconnected};
    const std::vector<double> times{10.25, 30.5, 40.0, 40.0};
    for (std::size_t i = 0; i < losses.size(); ++i) {
        QCOMPARE(losses[i].kind, kinds[i]);
        QCOMPARE(losses[i].task, tasks[i]);
        QCOMPARE(losses[i].attempt, attempts[i]);
        QCOMPARE(losses[i].volunteerId, volunteers[i]);
        QCOMPARE(losses[i].why, whys[i]);
        QCOMPARE(losses[i].at, times[i]);
    }
}

void TestLeaseStore::anAttemptIsLostOnceAndKeepsItsFirstReason() {
    Lab lab;
    QVERIFY(recordLeaseLoss(lab.db(), loss("graph", 4, 1, "v-1", LeaseLoss::Expired, 10.0)));
    // The same attempt reported lost again (its volunteer left after it expired): not an error,
    // and not a second loss.
    QVERIFY(recordLeaseLoss(lab.db(), loss("graph", 4, 1, "v-1", LeaseLoss::Disconnected, 11.0)));
    // Another attempt of the task, or the same attempt of another kind, is another loss.
    QVERIFY(recordLeaseLoss(lab.db(), loss("graph", 4, 2, "v-2", LeaseLoss::Disconnected, 12.0)));
    QVERIFY(recordLeaseLoss(lab.db(), loss("matmul", 4, 1, "v-1", LeaseLoss::TaskError, 13.0)));
    const auto losses = leaseLosses(lab.db());
    QCOMPARE(losses.size(), std::size_t{3});
    QCOMPARE(losses[0].kind, std::string("graph"));
    QCOMPARE(losses[0].attempt, std::int64_t{1});
    QCOMPARE(losses[0].why, LeaseLoss::Expired);
    QCOMPARE(losses[0].at, 10.0);
    QCOMPARE(losses[1].attempt, std::int64_t{2});
    QCOMPARE(losses[1].why, LeaseLoss::Disconnected);
    QCOMPARE(losses[2].kind, std::string("matmul"));
    QCOMPARE(losses[2].why, LeaseLoss::TaskError);
}

void TestLeaseStore::aLossWithAnUnknownReasonIsSkipped() {
    Lab lab;
    QVERIFY(recordLeaseLoss(lab.db(), loss("matmul", 1, 1, "v-1", LeaseLoss::Expired, 10.0)));
    // A row written by another version of the node, with a reason this one does not know.
    QVERIFY(lab.db()
                .execute("INSERT INTO lease_losses(kind, task_id, attempt, volunteer_id, why, at) "
                         "VALUES('matmul', 2, 1, 'v-2', 'vanished', 5.0)")
                .has_value());
    QVERIFY(recordLeaseLoss(lab.db(), loss("matmul", 3, 1, "v-3", LeaseLoss::TaskError, 20.0)));
    const auto losses = leaseLosses(lab.db());
    QCOMPARE(losses.size(), std::size_t{2});
    QCOMPARE(losses[0].task, std::int64_t{1});
    QCOMPARE(losses[1].task, std::int64_t{3});
    // Skipped, not deleted.
    QCOMPARE(lab.count("SELECT count(*) FROM lease_losses"), std::int64_t{3});
}

void TestLeaseStore::reasonsAreStoredByTheirNames() {
    Lab lab;
    QCOMPARE(leaseLossName(LeaseLoss::Expired), std::string_view("expired"));
    QCOMPARE(leaseLossName(LeaseLoss::Disconnected), std::string_view("disconnected"));
    QCOMPARE(leaseLossName(LeaseLoss::TaskError), std::string_view("task_error"));
    QCOMPARE(leaseLossName(LeaseLoss::NotSent), std::string_view("not_sent"));
    std::int64_t task = 0;
    for (LeaseLoss why :
         {LeaseLoss::Expired, LeaseLoss::Disconnected, LeaseLoss::TaskError, LeaseLoss::NotSent}) {
        ++task;
        QVERIFY(recordLeaseLoss(lab.db(), loss("graph", task, 1, "v-1", why, 1.0 * task)));
        QCOMPARE(lab.text("SELECT why FROM lease_losses WHERE task_id = " + std::to_string(task)),
                 std::string(leaseLossName(why)));
    }
}

void TestLeaseStore::onlyLossesOfTasksWhoseOwnJobEndedAreForgotten() {
    Lab lab;
    // Id 1 is a running tile and a done graph task; id 2 a released tile and a running graph task.
    const std::int64_t runningTile = lab.tileJob("j-run", JobState::Running);
    const std::int64_t doneGraph = lab.graphJob("g-done", JobState::Done);
    const std::int64_t releasedTile = lab.tileJob("j-gone", JobState::Released);
    const std::int64_t runningGraph = lab.graphJob("g-run", JobState::Running);
    QCOMPARE(runningTile, doneGraph);
    QCOMPARE(releasedTile, runningGraph);
    QVERIFY(runningTile != releasedTile);
    for (const char* kind : {"matmul", "graph"})
        for (std::int64_t task : {runningTile, releasedTile})
            QVERIFY(recordLeaseLoss(lab.db(), loss(kind, task, 1, "v-1", LeaseLoss::Expired, 5.0)));
    QVERIFY(forgetFinishedLeaseLosses(lab.db()).has_value());
    lab.reopen();
    const auto kept = leaseLosses(lab.db());
    QCOMPARE(kept.size(), std::size_t{2});
    QCOMPARE(kept[0].kind, std::string("matmul"));
    QCOMPARE(kept[0].task, runningTile);
    QCOMPARE(kept[1].kind, std::string("graph"));
    QCOMPARE(kept[1].task, runningGraph);
}

QTEST_GUILESS_MAIN(TestLeaseStore)
#include "test_lease_store.moc"
