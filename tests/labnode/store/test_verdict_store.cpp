// Tests of the verdict records (store/verdict_store) on a real SQLite file: a tile's and a graph
// replica's verdict read back as written after a reopen, each in its own table; a (task, attempt)
// has one verdict; the database itself refuses a second accepted tile while two graph replicas may
// both be accepted; a refused verdict inside the VerdictPath's transaction leaves no row and no
// counter behind; and a tile the node computed counts for no volunteer.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <cstdint>
#include <memory>
#include <string>

#include "kinds/graph/graph_store.hpp"
#include "store/node_store.hpp"
#include "store/verdict_store.hpp"

using namespace goblin::labnode;

namespace {

// A node's store on a file that survives closing it, with volunteers v-1 and v-2, a running matmul
// job "j-1" of one tile and a running graph job "g-1" of two tasks. Tiles and graph tasks are
// numbered in their own tables, so tile 1 and graph task 1 both exist.
struct Lab {
    QTemporaryDir dir;
    std::unique_ptr<NodeStore> store = std::make_unique<NodeStore>(path());
    std::int64_t tile = -1;
    std::int64_t graphTask = -1, otherGraphTask = -1;

    Lab() {
        const std::int64_t researcher = store->addResearcher("ada@lab.example", "h").value_or(0);
        JobRecord job;
        job.id = "j-1";
        job.researcherId = researcher;
        job.m = job.k = job.n = 2;
        job.tileRows = job.tileCols = 2;
        job.aBlob = std::string("blob-a"); // (assigning a literal trips GCC 12 -Wstringop-overflow)
        job.bBlob = std::string("blob-b");
        job.createdAt = 1.0;
        if (!store->insertJob(job) || !store->addVolunteer("v-1", "s1", 1.0) ||
            !store->addVolunteer("v-2", "s2", 1.0))
            return;
        tile = store->insertTask("j-1", TileRecord{0, 0, 0, 2, 2, false, 0}).value_or(-1);
        const GraphJobRow row{"g-1", researcher, JobState::Running, 2, "{}", "[]", 1.0, {}};
        if (!insertGraphJob(db(), row))
            return;
        const auto tasks = insertGraphTasks(db(), "g-1", 2);
        if (tasks && tasks->size() == 2) {
            graphTask = (*tasks)[0].id;
            otherGraphTask = (*tasks)[1].id;
        }
    }
    bool ready() const { return tile == 1 && graphTask == 1 && otherGraphTask == 2; }

    std::string path() const { return dir.filePath("node.db").toStdString(); }
    Database& db() { return store->database(); }
    void reopen() {
        store.reset();
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
    // "accepted/rejected" counters of a volunteer, e.g. "1/0".
    std::string counters(const std::string& volunteer) {
        return text("SELECT accepted || '/' || rejected FROM volunteers WHERE id = '" + volunteer +
                    "'");
    }
};

VerdictRecord verdict(const std::string& kind, std::int64_t task, std::int64_t attempt,
                      const std::string& volunteer, bool accepted) {
    VerdictRecord record;
    record.kind = kind;
    record.task = task;
    record.attempt = attempt;
    record.volunteerId = volunteer;
    record.backend = "cpu-eigen";
    record.accepted = accepted;
    record.method = kind == "graph" ? "replica-agreement" : "freivalds-f64";
    record.ratio = accepted ? 0.5 : 4.0;
    record.reason = accepted ? "" : "over its bound";
    return record;
}

} // namespace

class TestVerdictStore : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aTileVerdictReadsBackAsWritten();
    void aGraphVerdictReadsBackAsWrittenInItsOwnTable();
    void aTaskAndAttemptHaveOneVerdict();
    void theDatabaseRefusesASecondAcceptedTile();
    void twoGraphReplicasMayBothBeAccepted();
    void aRefusedVerdictInTheTransactionLeavesNoTrace();
    void aTileTheNodeComputedCountsForNoVolunteer();
};

void TestVerdictStore::aTileVerdictReadsBackAsWritten() {
    Lab lab;
    QVERIFY(lab.ready());
    VerdictRecord record = verdict("matmul", lab.tile, 3, "v-2", false);
    record.backend = "opencl";
    record.method = "freivalds-escalated";
    record.ratio = 2.5;
    record.residual = 7.5e-6;
    record.bound = 3e-6;
    record.reason = "element (1, 0) off by 7.5e-06";
    record.verifySeconds = 0.125;
    record.computeSeconds = 1.75;
    record.threshold = 1.0;
    QVERIFY(recordVerdict(lab.db(), record, 500.25).has_value());
    lab.reopen();
    auto row = lab.db().prepare(
        "SELECT task_id, attempt, volunteer_id, backend, verdict, method, error_ratio, residual, "
        "bound, reason, verify_seconds, compute_seconds, created_at, threshold FROM results");
    QVERIFY(row.step().value_or(false));
    QCOMPARE(row.columnInt(0), lab.tile);
    QCOMPARE(row.columnInt(1), std::int64_t{3});
    QCOMPARE(row.columnText(2), std::string("v-2"));
    QCOMPARE(row.columnText(3), std::string("opencl"));
    QCOMPARE(row.columnText(4), std::string("rejected"));
    QCOMPARE(row.columnText(5), std::string("freivalds-escalated"));
    QCOMPARE(row.columnDouble(6), 2.5);
    QCOMPARE(row.columnDouble(7), 7.5e-6);
    QCOMPARE(row.columnDouble(8), 3e-6);
    QCOMPARE(row.columnText(9), std::string("element (1, 0) off by 7.5e-06"));
    QCOMPARE(row.columnDouble(10), 0.125);
    QCOMPARE(row.columnDouble(11), 1.75);
    QCOMPARE(row.columnDouble(12), 500.25); // the time passed in, not the clock's
    QCOMPARE(row.columnDouble(13), 1.0);
    QVERIFY(!row.step().value_or(true)); // one row
    // A tile verdict never lands among the graph verdicts; a rejected one leaves the tile queued.
    QCOMPARE(lab.count("SELECT count(*) FROM graph_results"), std::int64_t{0});
    QCOMPARE(lab.text("SELECT state FROM tasks"), std::string("queued"));
    QCOMPARE(lab.counters("v-2"), std::string("0/1"));
}

void TestVerdictStore::aGraphVerdictReadsBackAsWrittenInItsOwnTable() {
    Lab lab;
    QVERIFY(lab.ready());
    VerdictRecord record = verdict("graph", lab.graphTask, 2, "v-1", true);
    record.backend = "opencl";
    record.method = "node-sample";
    record.ratio = 0.375;
    record.reason = "agrees with the node";
    record.computeSeconds = 2.25;
    QVERIFY(recordVerdict(lab.db(), record, 77.5).has_value());
    lab.reopen();
    auto row = lab.db().prepare("SELECT task_id, attempt, volunteer_id, backend, verdict, method, "
                                "disagreement_ratio, reason, compute_seconds, created_at FROM "
                                "graph_results");
    QVERIFY(row.step().value_or(false));
    QCOMPARE(row.columnInt(0), lab.graphTask);
    QCOMPARE(row.columnInt(1), std::int64_t{2});
    QCOMPARE(row.columnText(2), std::string("v-1"));
    QCOMPARE(row.columnText(3), std::string("opencl"));
    QCOMPARE(row.columnText(4), std::string("accepted"));
    QCOMPARE(row.columnText(5), std::string("node-sample"));
    QCOMPARE(row.columnDouble(6), 0.375);
    QCOMPARE(row.columnText(7), std::string("agrees with the node"));
    QCOMPARE(row.columnDouble(8), 2.25);
    QCOMPARE(row.columnDouble(9), 77.5);
    QVERIFY(!row.step().value_or(true));
    // Graph task 1 is not tile 1: the tile stays queued and has no result.
    QCOMPARE(lab.count("SELECT count(*) FROM results"), std::int64_t{0});
    QCOMPARE(lab.text("SELECT state FROM tasks WHERE id = 1"), std::string("queued"));
    QCOMPARE(lab.counters("v-1"), std::string("1/0"));
}

void TestVerdictStore::aTaskAndAttemptHaveOneVerdict() {
    Lab lab;
    QVERIFY(lab.ready());
    QVERIFY(recordVerdict(lab.db(), verdict("matmul", lab.tile, 1, "v-1", false), 10.0));
    QVERIFY(recordVerdict(lab.db(), verdict("graph", lab.graphTask, 1, "v-1", false), 10.0));
    // A replayed result for the same attempt, either way, is refused.
    for (bool accepted : {false, true}) {
        QVERIFY(!recordVerdict(lab.db(), verdict("matmul", lab.tile, 1, "v-2", accepted), 11.0));
        QVERIFY(
            !recordVerdict(lab.db(), verdict("graph", lab.graphTask, 1, "v-2", accepted), 11.0));
    }
    QCOMPARE(lab.count("SELECT count(*) FROM results"), std::int64_t{1});
    QCOMPARE(lab.count("SELECT count(*) FROM graph_results"), std::int64_t{1});
    QCOMPARE(lab.text("SELECT volunteer_id FROM results"), std::string("v-1"));
    QCOMPARE(lab.text("SELECT volunteer_id FROM graph_results"), std::string("v-1"));
    // The refused ones counted for nobody and accepted nothing.
    QCOMPARE(lab.counters("v-1"), std::string("0/2"));
    QCOMPARE(lab.counters("v-2"), std::string("0/0"));
    QCOMPARE(lab.text("SELECT state FROM tasks"), std::string("queued"));
    // Another attempt of the same task is another verdict.
    QVERIFY(recordVerdict(lab.db(), verdict("matmul", lab.tile, 2, "v-2", true), 12.0));
    QCOMPARE(lab.text("SELECT state FROM tasks"), std::string("accepted"));
}

void TestVerdictStore::theDatabaseRefusesASecondAcceptedTile() {
    Lab lab;
    QVERIFY(lab.ready());
    QVERIFY(recordVerdict(lab.db(), verdict("matmul", lab.tile, 1, "v-1", true), 10.0));
    // Not only recordVerdict: any accepted row for the tile, however written, is refused
    // (the one_accepted_result index), while a rejected one is not.
    const std::string insert = "INSERT INTO results(task_id, attempt, volunteer_id, verdict, "
                               "method, created_at) VALUES(1, 2, 'v-2', '";
    QVERIFY(!lab.db().execute(insert + "accepted', 'freivalds-f64', 11)").has_value());
    QVERIFY(lab.db().execute(insert + "rejected', 'freivalds-f64', 11)").has_value());
    const auto second = recordVerdict(lab.db(), verdict("matmul", lab.tile, 3, "v-2", true), 12.0);
    QVERIFY(!second.has_value());
    QCOMPARE(second.error().code, goblin::ErrorCode::Internal);
    QVERIFY2(second.error().message.find("UNIQUE") != std::string::npos,
             second.error().message.c_str());
    QCOMPARE(lab.count("SELECT count(*) FROM results WHERE verdict = 'accepted'"), std::int64_t{1});
    QCOMPARE(lab.text("SELECT volunteer_id FROM results WHERE verdict = 'accepted'"),
             std::string("v-1"));
    QCOMPARE(lab.counters("v-2"), std::string("0/0"));
}

void TestVerdictStore::twoGraphReplicasMayBothBeAccepted() {
    Lab lab;
    QVERIFY(lab.ready());
    // Every graph task is computed by two volunteers: both verdicts stand side by side.
    QVERIFY(recordVerdict(lab.db(), verdict("graph", lab.graphTask, 1, "v-1", true), 10.0));
    QVERIFY(recordVerdict(lab.db(), verdict("graph", lab.graphTask, 2, "v-2", true), 11.0));
    QVERIFY(recordVerdict(lab.db(), verdict("graph", lab.otherGraphTask, 1, "v-1", true), 12.0));
    QCOMPARE(lab.count("SELECT count(*) FROM graph_results WHERE verdict = 'accepted' AND "
                       "task_id = 1"),
             std::int64_t{2});
    QCOMPARE(lab.counters("v-1"), std::string("2/0"));
    QCOMPARE(lab.counters("v-2"), std::string("1/0"));
    // The tile with the same id as the graph task can still be accepted, once.
    QVERIFY(recordVerdict(lab.db(), verdict("matmul", lab.tile, 1, "v-2", true), 13.0));
    QCOMPARE(lab.text("SELECT state FROM tasks WHERE id = 1"), std::string("accepted"));
    // A graph verdict needs a graph task (graph_results' foreign key).
    QVERIFY(!recordVerdict(lab.db(), verdict("graph", 99, 1, "v-1", true), 14.0));
    QCOMPARE(lab.counters("v-1"), std::string("2/0"));
}

void TestVerdictStore::aRefusedVerdictInTheTransactionLeavesNoTrace() {
    Lab lab;
    QVERIFY(lab.ready());
    {
        // As the VerdictPath commits a burst: one transaction, dropped at the first refusal.
        auto transaction = Transaction::begin(lab.db());
        QVERIFY(transaction.has_value());
        QVERIFY(recordVerdict(lab.db(), verdict("matmul", lab.tile, 1, "v-1", true), 10.0));
        QVERIFY(recordVerdict(lab.db(), verdict("graph", lab.graphTask, 1, "v-2", false), 10.0));
        // A tile no job has: its row was inserted before the task was found missing.
        QVERIFY(!recordVerdict(lab.db(), verdict("matmul", 99, 1, "v-2", true), 10.0));
    }
    lab.reopen();
    QCOMPARE(lab.count("SELECT count(*) FROM results"), std::int64_t{0});
    QCOMPARE(lab.count("SELECT count(*) FROM graph_results"), std::int64_t{0});
    QCOMPARE(lab.text("SELECT state FROM tasks"), std::string("queued"));
    QCOMPARE(lab.counters("v-1"), std::string("0/0"));
    QCOMPARE(lab.counters("v-2"), std::string("0/0"));
    {
        // The same burst without the bad verdict commits whole.
        auto transaction = Transaction::begin(lab.db());
        QVERIFY(transaction.has_value());
        QVERIFY(recordVerdict(lab.db(), verdict("matmul", lab.tile, 1, "v-1", true), 20.0));
        QVERIFY(recordVerdict(lab.db(), verdict("graph", lab.graphTask, 1, "v-2", false), 20.0));
        QVERIFY(transaction->commit().has_value());
    }
    lab.reopen();
    QCOMPARE(lab.text("SELECT state FROM tasks"), std::string("accepted"));
    QCOMPARE(lab.count("SELECT count(*) FROM graph_results"), std::int64_t{1});
    QCOMPARE(lab.counters("v-1"), std::string("1/0"));
    QCOMPARE(lab.counters("v-2"), std::string("0/1"));
}

void TestVerdictStore::aTileTheNodeComputedCountsForNoVolunteer() {
    Lab lab;
    QVERIFY(lab.ready());
    QVERIFY(recordVerdict(lab.db(), verdict("matmul", lab.tile, 1, "v-1", false), 10.0));
    // As tile_node_compute records it: volunteer "node", attempt 0 (no lease), no volunteers row.
    VerdictRecord record = verdict("matmul", lab.tile, 0, "node", true);
    record.backend = "node-f64";
    record.method = "node-compute";
    record.ratio = 0;
    QVERIFY(recordVerdict(lab.db(), record, 20.0).has_value());
    QCOMPARE(lab.text("SELECT state FROM tasks"), std::string("accepted"));
    QCOMPARE(lab.text("SELECT method FROM results WHERE attempt = 0"), std::string("node-compute"));
    QCOMPARE(lab.count("SELECT count(*) FROM volunteers WHERE id = 'node'"), std::int64_t{0});
    QCOMPARE(lab.counters("v-1"), std::string("0/1"));
    QCOMPARE(lab.counters("v-2"), std::string("0/0"));
}

QTEST_GUILESS_MAIN(TestVerdictStore)
#include "test_verdict_store.moc"
