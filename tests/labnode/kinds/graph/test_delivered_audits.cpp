// Tests of audits of delivered graph jobs through the Coordinator with fake peers on a real
// SQLite file: a pair of colluders whose lie reached a researcher is caught later; the node
// rechecks the delivered (released, retained) job, overturns both replicas, quarantines the
// partner and pushes an audit_report with the corrected outputs, which `audit` returns too. A job
// released without retention is reported unverifiable; a retained job's data is deleted once its
// retention has passed, unless an audit is rechecking it; an unfinished audit is finished after a
// restart; clean jobs, other researchers' jobs and matmul jobs answer as they should.
#include <QtTest/QtTest>

#include <filesystem>

#include "labnode/fake_answers.hpp"
#include "support/random_tensors.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

CoordinatorSettings noAudits(double retentionSeconds = 7 * 24 * 3600.0) {
    CoordinatorSettings chosen;
    // The pair's agreement decides: their lie is delivered (what the audits after delivery fix).
    chosen.trust.probationAudits = 0;
    chosen.trust.auditFloor = 0.0;
    chosen.trust.sharedAddressRate = 0.0;
    chosen.auditRetentionSeconds = retentionSeconds;
    return chosen;
}

std::string lastJobId(const FakePeerLink& researcher) {
    return std::string(researcher.sentOfType("job_accepted").back().control.at("job").as_string());
}

bool equalsRelu(const net::TensorPtr& tensor, const core::Tensor& x) {
    const core::Tensor expected = relu(x);
    const auto got = tensor->values<float>();
    return tensor->shape() == x.shape() &&
           std::equal(got.begin(), got.end(), expected.values<float>().begin(),
                      expected.values<float>().end());
}

std::string stateOf(NodeHarness& node, const std::string& job) {
    auto query = node.store.database().prepare("SELECT state FROM graph_jobs WHERE id = ?");
    query.bind(1, job);
    return query.step().value_or(false) ? query.columnText(0) : std::string();
}

std::size_t blobCount(const std::string& folder) {
    std::size_t count = 0;
    for (const auto& entry : std::filesystem::directory_iterator(folder + "/blobs"))
        count += entry.is_regular_file() ? 1 : 0;
    return count;
}

// Two colluders on different addresses lie alike on every task of a relu job; the researcher
// gets the wrong job_done and releases the job. Returns the job id.
struct DeliveredLie {
    std::string job;
    FakeVolunteer* one = nullptr;
    FakeVolunteer* two = nullptr;
    std::shared_ptr<FakePeerLink> researcher;
};

DeliveredLie deliverALie(NodeHarness& node, FakeCluster& cluster, const core::Tensor& x) {
    DeliveredLie lie;
    lie.researcher = cluster.connectResearcher();
    lie.one = &cluster.connectVolunteer(2, true, "opencl-graph", "10.0.0.1");
    lie.two = &cluster.connectVolunteer(2, true, "opencl-graph", "10.0.0.2");
    cluster.fromResearcher(submitRelu(x));
    const bool done = node.waitUntil([&] {
        cluster.answer(*lie.one, lyingRelu);
        cluster.answer(*lie.two, lyingRelu);
        return lie.researcher->count("job_done") == 1;
    });
    lie.job = lastJobId(*lie.researcher);
    cluster.fromResearcher(control({{"type", "release"}, {"id", 7}, {"job", lie.job}}));
    (void)node.waitUntil([&] { return lie.researcher->count("released") == 1; });
    if (!done || equalsRelu(lie.researcher->sentOfType("job_done")[0].tensors.at(0), x))
        lie.job.clear(); // the setup did not deliver a lie: the test fails on an empty id
    return lie;
}

// One colluder is caught on a later job (a misshapen result fails the gate).
void catchOne(NodeHarness& node, FakeCluster& cluster, DeliveredLie& lie, const core::Tensor& x) {
    const std::size_t before = lie.one->link->count("task");
    cluster.fromResearcher(submitRelu(x));
    (void)node.waitUntil([&] { return lie.one->link->count("task") > before; });
    cluster.answer(*lie.one, misshapenResult);
}

// A node on `db` delivers a lie and stops right after recording an audit of the job (one colluder
// caught elsewhere), before its recheck ran. Returns the job id (empty if the setup failed).
std::string stopBeforeARecheck(const std::string& db, const std::string& blobs,
                               const core::Tensor& x, double retentionSeconds) {
    NodeHarness node(db, blobs);
    FakeCluster cluster(node, noAudits(retentionSeconds));
    DeliveredLie lie = deliverALie(node, cluster, x);
    auto insert = node.store.database().prepare(
        "INSERT INTO graph_job_audits(job_id, volunteer_id, reason, state, tasks, "
        "created_at) VALUES (?, ?, 'caught elsewhere', 'rechecking', 2, 1000)");
    insert.bind(1, lie.job).bind(2, lie.one->id());
    return !lie.job.empty() && insert.run() ? lie.job : std::string();
}

// The restarted node finishes that recheck: both tasks corrected, and the job's audit says so
// with the right outputs.
bool recheckCorrects(NodeHarness& node, FakeCluster& cluster, const std::string& job,
                     const core::Tensor& x) {
    const bool corrected = node.waitUntil([&] {
        return queryInt(node.store, "SELECT count(*) FROM graph_job_audits WHERE job_id = '" + job +
                                        "' AND state = 'corrected' AND corrected = 2") == 1;
    });
    auto researcher = cluster.connectResearcher();
    cluster.fromResearcher(control({{"type", "audit"}, {"id", 4}, {"job", job}}));
    if (!corrected || !node.waitUntil([&] { return researcher->count("audit_report") == 1; }))
        return false;
    auto report = net::parseAuditReport(researcher->sentOfType("audit_report")[0]);
    return report && report->state == "corrected" && equalsRelu(report->outputs.at(0), x);
}

} // namespace

class TestDeliveredAudits : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void caughtPairHasItsDeliveredJobCorrected();
    void releasedWithoutRetentionIsUnverifiable();
    void retentionEndsAndTheDataIsDeleted();
    void unfinishedAuditIsFinishedAfterARestart();
    void anAuditInFlightKeepsTheDataPastItsRetention();
    void cleanJobsAndOtherResearchers();
};

void TestDeliveredAudits::caughtPairHasItsDeliveredJobCorrected() {
    NodeHarness node;
    FakeCluster cluster(node, noAudits());
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 21);
    DeliveredLie lie = deliverALie(node, cluster, x);
    QVERIFY(!lie.job.empty());
    QCOMPARE(stateOf(node, lie.job), std::string("retained")); // kept for audits
    const std::string oneId = lie.one->id(), twoId = lie.two->id();
    catchOne(node, cluster, lie, x);

    // The pushed report: the job's outputs as the node recomputed them.
    QVERIFY(node.waitUntil([&] { return lie.researcher->count("audit_report") == 1; }));
    const auto pushed = lie.researcher->sentOfType("audit_report")[0];
    auto report = net::parseAuditReport(pushed);
    QVERIFY(report);
    QCOMPARE(report->id, std::int64_t{0});
    QCOMPARE(report->job, lie.job);
    QCOMPARE(report->state, std::string("corrected"));
    QCOMPARE(report->audits.size(), std::size_t{1});
    QCOMPARE(report->audits[0].volunteer, oneId);
    QCOMPARE(report->audits[0].tasks, std::int64_t{2});
    QCOMPARE(report->audits[0].corrected, std::int64_t{2});
    QCOMPARE(report->outputs.size(), std::size_t{1});
    QVERIFY(equalsRelu(report->outputs[0], x));
    // Both replicas of both tasks overturned; the partner quarantined too.
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_results r JOIN graph_tasks t ON "
                                  "t.id = r.task_id WHERE t.job_id = '" +
                                      lie.job +
                                      "' AND r.verdict = 'rejected' AND "
                                      "r.method = 'delivered-recheck'"),
             std::int64_t{4});
    QVERIFY(node.waitUntil([&] { return quarantined(node, twoId); }));
    QVERIFY(quarantined(node, oneId));

    // Asked later, the same answer.
    cluster.fromResearcher(control({{"type", "audit"}, {"id", 9}, {"job", lie.job}}));
    QVERIFY(node.waitUntil([&] {
        for (const auto& message : lie.researcher->sentOfType("audit_report"))
            if (message.control.at("id") == 9)
                return true;
        return false;
    }));
    auto asked = net::parseAuditReport(lie.researcher->sentOfType("audit_report").back());
    QVERIFY(asked);
    QCOMPARE(asked->id, std::int64_t{9});
    QCOMPARE(asked->state, std::string("corrected"));
    QCOMPARE(asked->outputs.size(), std::size_t{1});
    QVERIFY(equalsRelu(asked->outputs[0], x));
    // The partner's quarantine found nothing left to correct in that job: one audit only.
    QVERIFY(node.waitUntil([&] {
        return queryInt(node.store,
                        "SELECT count(*) FROM graph_job_audits WHERE state = 'rechecking'") == 0;
    }));
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_job_audits WHERE job_id = '" +
                                      lie.job + "' AND state = 'corrected'"),
             std::int64_t{1});
}

void TestDeliveredAudits::releasedWithoutRetentionIsUnverifiable() {
    NodeHarness node;
    FakeCluster cluster(node, noAudits(0));
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 22);
    DeliveredLie lie = deliverALie(node, cluster, x);
    QVERIFY(!lie.job.empty());
    QCOMPARE(stateOf(node, lie.job), std::string("released"));
    catchOne(node, cluster, lie, x);
    QVERIFY(node.waitUntil([&] { return lie.researcher->count("audit_report") >= 1; }));
    auto report = net::parseAuditReport(lie.researcher->sentOfType("audit_report")[0]);
    QVERIFY(report);
    QCOMPARE(report->state, std::string("unverifiable"));
    QCOMPARE(report->audits.at(0).tasks, std::int64_t{2});
    QVERIFY(report->outputs.empty());
}

void TestDeliveredAudits::retentionEndsAndTheDataIsDeleted() {
    const NodeFiles files;
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 23);
    std::string job;
    {
        NodeHarness node(files.db, files.blobs);
        FakeCluster cluster(node, noAudits(3600));
        DeliveredLie lie = deliverALie(node, cluster, x);
        job = lie.job;
        QVERIFY(!job.empty());
        QCOMPARE(stateOf(node, job), std::string("retained"));
        QVERIFY(blobCount(files.blobs) > 0);
        // A retained job is released as far as its researcher can tell.
        cluster.fromResearcher(control({{"type", "fetch"}, {"id", 8}, {"job", job}}));
        QVERIFY(node.waitUntil([&] { return lie.researcher->count("error") == 1; }));
        QCOMPARE(lie.researcher->sentOfType("error")[0].control.at("code"),
                 boost::json::value("not_found"));
    }
    NodeHarness node(files.db, files.blobs);
    node.now += 1800; // within the retention: kept
    {
        FakeCluster cluster(node, noAudits(3600));
        QCOMPARE(stateOf(node, job), std::string("retained"));
        QVERIFY(blobCount(files.blobs) > 0);
    }
    node.now += 3600; // past it: deleted when the node starts (and hourly)
    FakeCluster cluster(node, noAudits(3600));
    QCOMPARE(stateOf(node, job), std::string("released"));
    QCOMPARE(blobCount(files.blobs), std::size_t{0});
    QVERIFY(node.logged("graph job " + job + ": its retention for audits ended"));
}

void TestDeliveredAudits::unfinishedAuditIsFinishedAfterARestart() {
    const NodeFiles files;
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 24);
    const std::string job = stopBeforeARecheck(files.db, files.blobs, x, 7 * 24 * 3600.0);
    QVERIFY(!job.empty());
    NodeHarness node(files.db, files.blobs);
    FakeCluster cluster(node, noAudits());
    QVERIFY(recheckCorrects(node, cluster, job, x));
}

void TestDeliveredAudits::anAuditInFlightKeepsTheDataPastItsRetention() {
    const NodeFiles files;
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 25);
    const std::string job = stopBeforeARecheck(files.db, files.blobs, x, 3600);
    QVERIFY(!job.empty());
    // It starts again after the job's retention passed: the start-up's pruning leaves the job's
    // data to the recheck, which corrects it.
    NodeHarness node(files.db, files.blobs);
    node.now += 7200;
    {
        FakeCluster cluster(node, noAudits(3600));
        QVERIFY(recheckCorrects(node, cluster, job, x));
        QCOMPARE(stateOf(node, job), std::string("retained"));
    }
    // With the recheck over, the next pruning deletes it, the outputs the recheck replaced too.
    FakeCluster cluster(node, noAudits(3600));
    QCOMPARE(stateOf(node, job), std::string("released"));
    QCOMPARE(blobCount(files.blobs), std::size_t{0});
}

void TestDeliveredAudits::cleanJobsAndOtherResearchers() {
    NodeHarness node;
    FakeCluster cluster(node, noAudits());
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 25);
    auto researcher = cluster.connectResearcher();
    auto& one = cluster.connectVolunteer(2, true, "opencl-graph", "10.0.0.1");
    auto& two = cluster.connectVolunteer(2, true, "cpu-reference", "10.0.0.2");
    cluster.fromResearcher(submitRelu(x));
    QVERIFY(node.waitUntil([&] {
        cluster.answer(one, honestRelu);
        cluster.answer(two, honestRelu);
        return researcher->count("job_done") == 1;
    }));
    const std::string job = lastJobId(*researcher);
    cluster.fromResearcher(control({{"type", "audit"}, {"id", 5}, {"job", job}}));
    QVERIFY(node.waitUntil([&] { return researcher->count("audit_report") == 1; }));
    auto report = net::parseAuditReport(researcher->sentOfType("audit_report")[0]);
    QVERIFY(report);
    QCOMPARE(report->state, std::string("clean"));
    QVERIFY(report->audits.empty() && report->outputs.empty());
    // Another researcher, or a job that does not exist: not found, nothing more.
    auto other = cluster.connectResearcher("tok-2");
    cluster.fromResearcher(control({{"type", "audit"}, {"id", 6}, {"job", job}}));
    cluster.fromResearcher(control({{"type", "audit"}, {"id", 7}, {"job", "g-missing"}}));
    QVERIFY(node.waitUntil([&] { return other->count("error") == 2; }));
    for (const auto& error : other->sentOfType("error"))
        QCOMPARE(error.control.at("code"), boost::json::value("not_found"));
    QCOMPARE(other->count("audit_report"), std::size_t{0});
}

QTEST_APPLESS_MAIN(TestDeliveredAudits)
#include "test_delivered_audits.moc"
