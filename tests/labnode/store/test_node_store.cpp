// Tests of NodeStore on a real SQLite file: schema, researchers, volunteers, jobs, tasks, leases,
// results (a tile is accepted at most once) and per-job summaries.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <cstdint>
#include <string>

#include "store/lease_store.hpp"
#include "store/node_store.hpp"
#include "store/verdict_store.hpp"

using goblin::core::DType;
using goblin::labnode::Database;
using goblin::labnode::JobRecord;
using goblin::labnode::JobState;
using goblin::labnode::kSchemaVersion;
using goblin::labnode::LeaseLoss;
using goblin::labnode::LeaseLossRecord;
using goblin::labnode::LeaseRecord;
using goblin::labnode::NodeStore;
using goblin::labnode::TileRecord;
using goblin::labnode::Transaction;
using goblin::labnode::VerdictRecord;

namespace {

std::int64_t queryInt(NodeStore& store, const std::string& sql) {
    auto query = store.database().prepare(sql);
    if (!query.step().value_or(false))
        return -1;
    return query.columnInt(0);
}

std::string queryText(NodeStore& store, const std::string& sql) {
    auto query = store.database().prepare(sql);
    if (!query.step().value_or(false))
        return {};
    return query.columnText(0);
}

JobRecord sampleJob(const std::string& id, std::int64_t researcher) {
    JobRecord job;
    job.id = id;
    job.researcherId = researcher;
    job.dtype = DType::F64;
    job.m = 6;
    job.k = 5;
    job.n = 4;
    job.tileRows = 3;
    job.tileCols = 2;
    job.aBlob = "aaaa" + id;
    job.bBlob = "bbbb" + id;
    job.state = JobState::Running;
    job.createdAt = 1000.5;
    return job;
}

VerdictRecord result(std::int64_t task, std::int64_t attempt, const std::string& volunteer,
                     bool accepted, double ratio) {
    VerdictRecord record;
    record.kind = "matmul";
    record.method = "freivalds-f64";
    record.task = task;
    record.attempt = attempt;
    record.volunteerId = volunteer;
    record.backend = volunteer == "v-2" ? "opencl" : "cpu-eigen";
    record.accepted = accepted;
    record.ratio = ratio;
    record.residual = ratio * 1e-9;
    record.bound = 1e-9;
    record.reason = accepted ? "" : "residual over bound";
    record.verifySeconds = 0.25;
    record.computeSeconds = 1.5;
    return record;
}

goblin::Expected<void> recordLease(NodeStore& store, std::int64_t task, std::int64_t attempt,
                                   const std::string& volunteer, double now, double deadline) {
    return goblin::labnode::recordLease(
        store.database(), LeaseRecord{"matmul", task, attempt, volunteer, now, deadline});
}

goblin::Expected<void> recordResult(NodeStore& store, const VerdictRecord& verdict, double now) {
    return goblin::labnode::recordVerdict(store.database(), verdict, now);
}

} // namespace

class TestNodeStore : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init();
    void cleanup();
    void schemaVersionRow();
    void version3GainsTheThresholdColumn();
    void version4GraphJobsLearnTheirTrainingJob();
    void walJournalMode();
    void researcherByTokenHash();
    void volunteers();
    void jobAndTasksReload();
    void jobNeedsKnownResearcher();
    void recordLeaseUpdatesAttempt();
    void acceptedResultMarksTask();
    void secondAcceptedResultFails();
    void summaryCounts();
    void transactionRollsBack();
    void blobInUse();
    void finishedJobsLeaseLossesAreForgotten();

private:
    std::string path() const { return m_dir->filePath("node.sqlite").toStdString(); }
    // A researcher, a job "j-1" with 4 tiles and two volunteers; returns the task ids.
    std::vector<std::int64_t> seedJob(NodeStore& store);

    std::unique_ptr<QTemporaryDir> m_dir;
};

void TestNodeStore::init() {
    m_dir = std::make_unique<QTemporaryDir>();
    QVERIFY(m_dir->isValid());
}

void TestNodeStore::cleanup() {
    m_dir.reset();
}

std::vector<std::int64_t> TestNodeStore::seedJob(NodeStore& store) {
    const auto researcher = store.addResearcher("ada@lab.example", "token-hash-1");
    if (!researcher)
        return {};
    if (!store.insertJob(sampleJob("j-1", *researcher)))
        return {};
    std::vector<std::int64_t> ids;
    for (std::int64_t row0 : {0, 3}) {
        for (std::int64_t col0 : {0, 2}) {
            auto id = store.insertTask("j-1", TileRecord{0, row0, col0, 3, 2, false, 0});
            if (!id)
                return {};
            ids.push_back(*id);
        }
    }
    if (!store.addVolunteer("v-1", "secret-hash-1", 10.0) ||
        !store.addVolunteer("v-2", "secret-hash-2", 11.0))
        return {};
    return ids;
}

void TestNodeStore::schemaVersionRow() {
    {
        NodeStore store(path());
        QCOMPARE(queryInt(store, "SELECT count(*) FROM schema_version"), std::int64_t{1});
        QCOMPARE(queryInt(store, "SELECT version FROM schema_version"),
                 std::int64_t{kSchemaVersion});
    }
    // Reopening migrates nothing twice.
    NodeStore reopened(path());
    QCOMPARE(queryInt(reopened, "SELECT count(*) FROM schema_version"), std::int64_t{1});
    // A database from an unknown version is refused at startup.
    QVERIFY(reopened.database().execute("UPDATE schema_version SET version = 99").has_value());
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, NodeStore{path()});
}

void TestNodeStore::version3GainsTheThresholdColumn() {
    {
        // A version 3 database: results without the threshold column, with a verdict in it.
        NodeStore store(path());
        goblin::labnode::Database& db = store.database();
        QVERIFY(
            db.execute("DROP TABLE results; CREATE TABLE results(task_id INTEGER NOT NULL, "
                       "attempt INTEGER NOT NULL, volunteer_id TEXT NOT NULL, backend TEXT, "
                       "verdict TEXT NOT NULL, method TEXT NOT NULL, error_ratio REAL, "
                       "residual REAL, bound REAL, reason TEXT, verify_seconds REAL, "
                       "compute_seconds REAL, created_at REAL NOT NULL, "
                       "PRIMARY KEY(task_id, attempt)); INSERT INTO results VALUES(1, 1, 'v-1', "
                       "'cpu', 'rejected', 'freivalds-f64', 3, 3, 1, 'off', 0, 0, 5); "
                       "UPDATE schema_version SET version = 3")
                .has_value());
    }
    NodeStore migrated(path());
    QCOMPARE(queryInt(migrated, "SELECT version FROM schema_version"),
             std::int64_t{kSchemaVersion});
    QCOMPARE(queryInt(migrated, "SELECT count(*) FROM results WHERE threshold IS NULL"),
             std::int64_t{1});
    QCOMPARE(queryText(migrated, "SELECT reason FROM results"), std::string("off"));
}

void TestNodeStore::version4GraphJobsLearnTheirTrainingJob() {
    {
        // A version 4 database: graph jobs without owners; training job t-1 (resumed at round 2)
        // committed round 2 as g-round and runs round 3 as g-flight; g-own is a graph job.
        NodeStore store(path());
        Database& db = store.database();
        QVERIFY(
            db.execute(
                  "DROP TABLE graph_jobs; CREATE TABLE graph_jobs(id TEXT PRIMARY KEY, "
                  "researcher_id INTEGER NOT NULL REFERENCES researchers(id), tasks INTEGER NOT "
                  "NULL, request TEXT NOT NULL, inputs TEXT NOT NULL, state TEXT NOT NULL, "
                  "created_at REAL NOT NULL, finished_at REAL); "
                  "INSERT INTO researchers(id, email, token_hash) VALUES (1, 'a@lab', 'h'); "
                  "INSERT INTO graph_jobs VALUES ('g-round', 1, 2, '{}', '[]', 'released', 1, 2), "
                  "('g-flight', 1, 2, '{}', '[]', 'running', 3, NULL), "
                  "('g-own', 1, 1, '{}', '[]', 'done', 4, 5); "
                  "INSERT INTO train_jobs(id, researcher_id, state, request, inputs, params, "
                  "rounds_done, round_job, created_at, updated_at) VALUES ('t-1', 1, 'running', "
                  "'{\"train\": {\"first_round\": 2}}', '[]', '[]', 1, 'g-flight', 1, 3); "
                  "INSERT INTO train_rounds VALUES ('t-1', 2, 0.5, 1, 2, 0, 0, 0, 1, 0.1, "
                  "'g-round'); UPDATE schema_version SET version = 4")
                .has_value());
    }
    NodeStore migrated(path());
    QCOMPARE(queryInt(migrated, "SELECT version FROM schema_version"),
             std::int64_t{kSchemaVersion});
    QCOMPARE(queryText(migrated, "SELECT group_concat(id || ':' || coalesce(owner_job, '-') || ':' "
                                 "|| coalesce(owner_round, '-'), ' ') FROM (SELECT * FROM "
                                 "graph_jobs ORDER BY id)"),
             std::string("g-flight:t-1:3 g-own:-:- g-round:t-1:2"));
    QCOMPARE(queryInt(migrated, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                                "name = 'graph_jobs_by_owner'"),
             std::int64_t{1});
    // Opened again: nothing more to migrate.
    NodeStore again(path());
    QCOMPARE(queryText(again, "SELECT owner_job FROM graph_jobs WHERE id = 'g-round'"),
             std::string("t-1"));
}

void TestNodeStore::walJournalMode() {
    NodeStore store(path());
    QCOMPARE(queryText(store, "PRAGMA journal_mode"), std::string("wal"));
    QCOMPARE(queryInt(store, "PRAGMA foreign_keys"), std::int64_t{1});
    QVERIFY(QFile::exists(m_dir->filePath("node.sqlite")));
}

void TestNodeStore::researcherByTokenHash() {
    NodeStore store(path());
    const auto ada = store.addResearcher("ada@lab.example", "hash-ada");
    const auto bob = store.addResearcher("bob@lab.example", "hash-bob");
    QVERIFY(ada.has_value() && bob.has_value());
    QVERIFY(*ada != *bob);
    QCOMPARE(store.researcherByTokenHash("hash-ada"), std::optional<std::int64_t>(*ada));
    QCOMPARE(store.researcherByTokenHash("hash-bob"), std::optional<std::int64_t>(*bob));
    QCOMPARE(store.researcherByTokenHash("hash-eve"), std::optional<std::int64_t>());
    QCOMPARE(store.researcherByTokenHash(""), std::optional<std::int64_t>());
    // A new token for the same email replaces the old one and keeps the id.
    const auto again = store.addResearcher("ada@lab.example", "hash-ada-2");
    QVERIFY(again.has_value());
    QCOMPARE(*again, *ada);
    QCOMPARE(store.researcherByTokenHash("hash-ada"), std::optional<std::int64_t>());
    QCOMPARE(store.researcherByTokenHash("hash-ada-2"), std::optional<std::int64_t>(*ada));
    // Two researchers can never share a token hash.
    QVERIFY(!store.addResearcher("eve@lab.example", "hash-bob").has_value());
}

void TestNodeStore::volunteers() {
    NodeStore store(path());
    QVERIFY(store.addVolunteer("v-abc", "hash-abc", 123.0).has_value());
    const auto found = store.volunteer("v-abc");
    QVERIFY(found.has_value());
    QCOMPARE(found->id, std::string("v-abc"));
    QCOMPARE(found->secretHash, std::string("hash-abc"));
    QVERIFY(!found->banned);
    QVERIFY(!store.volunteer("v-zzz").has_value());
    // Ids are unique.
    QVERIFY(!store.addVolunteer("v-abc", "other", 124.0).has_value());
    QCOMPARE(store.volunteer("v-abc")->secretHash, std::string("hash-abc"));

    QVERIFY(store.touchVolunteer("v-abc", "opencl", 200.0).has_value());
    QCOMPARE(queryText(store, "SELECT backend FROM volunteers WHERE id = 'v-abc'"),
             std::string("opencl"));
    QCOMPARE(queryInt(store, "SELECT CAST(last_seen AS INTEGER) FROM volunteers WHERE id='v-abc'"),
             std::int64_t{200});
    QVERIFY(store.database().execute("UPDATE volunteers SET banned = 1 WHERE id = 'v-abc'"));
    QVERIFY(store.volunteer("v-abc")->banned);
}

void TestNodeStore::jobAndTasksReload() {
    std::vector<std::int64_t> ids;
    std::int64_t researcher = 0;
    {
        NodeStore store(path());
        ids = seedJob(store);
        QCOMPARE(ids.size(), std::size_t{4});
        researcher = *store.researcherByTokenHash("token-hash-1");
    }
    NodeStore store(path()); // everything survives a reopen
    const auto job = store.job("j-1");
    QVERIFY(job.has_value());
    const JobRecord expected = sampleJob("j-1", researcher);
    QCOMPARE(job->researcherId, expected.researcherId);
    QCOMPARE(job->dtype, DType::F64);
    QCOMPARE(job->m, expected.m);
    QCOMPARE(job->k, expected.k);
    QCOMPARE(job->n, expected.n);
    QCOMPARE(job->tileRows, expected.tileRows);
    QCOMPARE(job->tileCols, expected.tileCols);
    QCOMPARE(job->aBlob, expected.aBlob);
    QCOMPARE(job->bBlob, expected.bBlob);
    QCOMPARE(job->state, JobState::Running);
    QCOMPARE(job->createdAt, 1000.5);
    QCOMPARE(job->finishedAt, 0.0);
    QVERIFY(!store.job("j-404").has_value());

    QCOMPARE(store.jobsInState(JobState::Running).size(), std::size_t{1});
    QCOMPARE(store.jobsInState(JobState::Done).size(), std::size_t{0});

    const auto tiles = store.tilesOf("j-1");
    QCOMPARE(tiles.size(), std::size_t{4});
    const std::int64_t rows0[] = {0, 0, 3, 3};
    const std::int64_t cols0[] = {0, 2, 0, 2};
    for (std::size_t i = 0; i < tiles.size(); ++i) {
        QCOMPARE(tiles[i].taskId, ids[i]);
        QCOMPARE(tiles[i].row0, rows0[i]);
        QCOMPARE(tiles[i].col0, cols0[i]);
        QCOMPARE(tiles[i].rows, std::int64_t{3});
        QCOMPARE(tiles[i].cols, std::int64_t{2});
        QVERIFY(!tiles[i].accepted);
        QCOMPARE(tiles[i].attempt, std::int64_t{0});
    }
    QVERIFY(store.tilesOf("j-404").empty());

    QVERIFY(store.setJobState("j-1", JobState::Done, 2000.0).has_value());
    QCOMPARE(store.job("j-1")->state, JobState::Done);
    QCOMPARE(store.job("j-1")->finishedAt, 2000.0);
    // The first finish time is kept.
    QVERIFY(store.setJobState("j-1", JobState::Released, 3000.0).has_value());
    QCOMPARE(store.job("j-1")->finishedAt, 2000.0);
    QCOMPARE(store.jobsInState(JobState::Running).size(), std::size_t{0});
}

void TestNodeStore::jobNeedsKnownResearcher() {
    NodeStore store(path());
    QVERIFY(!store.insertJob(sampleJob("j-orphan", 4242)).has_value());
    QVERIFY(!store.job("j-orphan").has_value());
    QVERIFY(!store.insertTask("j-orphan", TileRecord{0, 0, 0, 1, 1, false, 0}).has_value());
}

void TestNodeStore::recordLeaseUpdatesAttempt() {
    NodeStore store(path());
    const auto ids = seedJob(store);
    QCOMPARE(ids.size(), std::size_t{4});
    QVERIFY(recordLease(store, ids[1], 1, "v-1", 50.0, 170.0).has_value());
    QCOMPARE(store.tilesOf("j-1")[1].attempt, std::int64_t{1});
    QCOMPARE(store.tilesOf("j-1")[0].attempt, std::int64_t{0});
    QVERIFY(recordLease(store, ids[1], 2, "v-2", 180.0, 300.0).has_value());
    QCOMPARE(store.tilesOf("j-1")[1].attempt, std::int64_t{2});
    // An attempt number is never leased twice.
    QVERIFY(!recordLease(store, ids[1], 2, "v-1", 190.0, 310.0).has_value());
    QCOMPARE(queryInt(store, "SELECT count(*) FROM task_leases"), std::int64_t{2});
    QCOMPARE(queryText(store, "SELECT volunteer_id FROM task_leases WHERE attempt = 2"),
             std::string("v-2"));
}

void TestNodeStore::acceptedResultMarksTask() {
    NodeStore store(path());
    const auto ids = seedJob(store);
    QCOMPARE(ids.size(), std::size_t{4});
    QVERIFY(recordResult(store, result(ids[0], 1, "v-1", false, 7.0), 60.0).has_value());
    QVERIFY(!store.tilesOf("j-1")[0].accepted);
    QVERIFY(recordResult(store, result(ids[0], 2, "v-2", true, 0.25), 61.0).has_value());
    QVERIFY(store.tilesOf("j-1")[0].accepted);
    QVERIFY(!store.tilesOf("j-1")[1].accepted);
    QCOMPARE(queryInt(store, "SELECT rejected FROM volunteers WHERE id = 'v-1'"), std::int64_t{1});
    QCOMPARE(queryInt(store, "SELECT accepted FROM volunteers WHERE id = 'v-1'"), std::int64_t{0});
    QCOMPARE(queryInt(store, "SELECT accepted FROM volunteers WHERE id = 'v-2'"), std::int64_t{1});
    QCOMPARE(queryInt(store, "SELECT rejected FROM volunteers WHERE id = 'v-2'"), std::int64_t{0});
    QCOMPARE(queryText(store, "SELECT state FROM tasks WHERE id = " + std::to_string(ids[0])),
             std::string("accepted"));
}

void TestNodeStore::secondAcceptedResultFails() {
    NodeStore store(path());
    const auto ids = seedJob(store);
    QCOMPARE(ids.size(), std::size_t{4});
    QVERIFY(recordResult(store, result(ids[2], 1, "v-1", true, 0.1), 60.0).has_value());
    {
        // As the coordinator does it: inside a transaction that is dropped on failure.
        auto transaction = Transaction::begin(store.database());
        QVERIFY(transaction.has_value());
        auto second = recordResult(store, result(ids[2], 2, "v-2", true, 0.2), 61.0);
        QVERIFY2(!second.has_value(), "a second accepted result for one task was recorded");
    }
    // Outside a transaction as well.
    QVERIFY(!recordResult(store, result(ids[2], 3, "v-2", true, 0.3), 62.0).has_value());
    const std::string task = std::to_string(ids[2]);
    QCOMPARE(
        queryInt(store,
                 "SELECT count(*) FROM results WHERE verdict = 'accepted' AND task_id = " + task),
        std::int64_t{1});
    QCOMPARE(queryText(store, "SELECT volunteer_id FROM results WHERE task_id = " + task),
             std::string("v-1"));
    // The failed attempts bumped no counters.
    QCOMPARE(queryInt(store, "SELECT accepted FROM volunteers WHERE id = 'v-2'"), std::int64_t{0});
    QCOMPARE(queryInt(store, "SELECT accepted FROM volunteers WHERE id = 'v-1'"), std::int64_t{1});
    // A rejected result for an accepted task is still recorded (a late, wrong answer).
    QVERIFY(recordResult(store, result(ids[2], 4, "v-2", false, 9.0), 63.0).has_value());
    QVERIFY(store.tilesOf("j-1")[2].accepted);
}

void TestNodeStore::summaryCounts() {
    NodeStore store(path());
    const auto ids = seedJob(store);
    QCOMPARE(ids.size(), std::size_t{4});
    QVERIFY(recordResult(store, result(ids[0], 1, "v-1", true, 0.125), 60.0).has_value());
    QVERIFY(recordResult(store, result(ids[1], 1, "v-1", false, 12.0), 61.0).has_value());
    QVERIFY(recordResult(store, result(ids[1], 2, "v-2", true, 0.5), 62.0).has_value());
    QVERIFY(recordResult(store, result(ids[2], 1, "v-1", true, 0.25), 63.0).has_value());
    const auto counts = store.summaryCounts("j-1");
    QCOMPARE(counts.accepted, std::int64_t{3});
    QCOMPARE(counts.rejected, std::int64_t{1});
    QCOMPARE(counts.volunteers, std::int64_t{2});
    QCOMPARE(counts.maxErrorRatio, 0.5); // the rejected 12.0 does not count
    QCOMPARE(counts.verifySeconds, 1.0);
    auto backends = counts.backends;
    std::sort(backends.begin(), backends.end());
    QCOMPARE(backends.size(), std::size_t{2});
    QCOMPARE(backends[0].first, std::string("cpu-eigen"));
    QCOMPARE(backends[0].second, std::int64_t{2});
    QCOMPARE(backends[1].first, std::string("opencl"));
    QCOMPARE(backends[1].second, std::int64_t{1});

    const auto none = store.summaryCounts("j-404");
    QCOMPARE(none.accepted, std::int64_t{0});
    QCOMPARE(none.rejected, std::int64_t{0});
    QVERIFY(none.backends.empty());
}

void TestNodeStore::transactionRollsBack() {
    NodeStore store(path());
    {
        auto transaction = Transaction::begin(store.database());
        QVERIFY(transaction.has_value());
        QVERIFY(store.addVolunteer("v-gone", "h", 1.0).has_value());
    }
    QVERIFY(!store.volunteer("v-gone").has_value());
    {
        auto transaction = Transaction::begin(store.database());
        QVERIFY(transaction.has_value());
        QVERIFY(store.addVolunteer("v-kept", "h", 1.0).has_value());
        QVERIFY(transaction->commit().has_value());
    }
    NodeStore reopened(path());
    QVERIFY(reopened.volunteer("v-kept").has_value());
}

void TestNodeStore::blobInUse() {
    NodeStore store(path());
    const auto researcher = store.addResearcher("ada@lab.example", "h");
    QVERIFY(researcher.has_value());
    JobRecord first = sampleJob("j-1", *researcher);
    JobRecord second = sampleJob("j-2", *researcher);
    second.aBlob = first.aBlob; // the same A in two jobs
    QVERIFY(store.insertJob(first).has_value());
    QVERIFY(store.insertJob(second).has_value());
    QVERIFY(store.blobInUse(first.aBlob, "j-1"));
    QVERIFY(!store.blobInUse(first.bBlob, "j-1"));
    QVERIFY(store.setJobState("j-2", JobState::Released, 5.0).has_value());
    QVERIFY(!store.blobInUse(first.aBlob, "j-1"));
}

void TestNodeStore::finishedJobsLeaseLossesAreForgotten() {
    NodeStore store(path());
    const auto tasks = seedJob(store); // j-1, running
    QCOMPARE(tasks.size(), std::size_t{4});
    const auto researcher = store.researcherByTokenHash("token-hash-1");
    QVERIFY(researcher.has_value());
    QVERIFY(store.insertJob(sampleJob("j-2", *researcher)).has_value());
    const auto finished = store.insertTask("j-2", TileRecord{0, 0, 0, 3, 2, false, 0});
    QVERIFY(finished.has_value());
    QVERIFY(store.setJobState("j-2", JobState::Done, 5.0).has_value());
    Database& db = store.database();
    for (std::int64_t task : {tasks[0], *finished})
        QVERIFY(
            recordLeaseLoss(db, LeaseLossRecord{"matmul", task, 1, "v-1", LeaseLoss::Expired, 6.0})
                .has_value());
    QVERIFY(forgetFinishedLeaseLosses(db).has_value());
    const auto kept = leaseLosses(db);
    QCOMPARE(kept.size(), std::size_t{1}); // the running job's loss still bars v-1
    QCOMPARE(kept[0].task, tasks[0]);
}

QTEST_APPLESS_MAIN(TestNodeStore)
#include "test_node_store.moc"
