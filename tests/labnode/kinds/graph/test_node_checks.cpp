// Tests of NodeChecks (node_checks.hpp) on the graph rig's book: the node's reference computation
// of a task equals, bit for bit, the task's rows of one independent reference run of the whole
// job's graph (witness included) and comes back on core, even for a task released meanwhile; a
// cheap audit passes a replica's honest claims, checking the witnessed matmul by Freivalds rather
// than recomputing it, and fails a lie in a researcher output or a witness, or lazy zeros, also
// when two audits of one job (sharing its probes) run at once; afterNodeCheck counts the seconds
// to the task's job and hands back the task only while it still waits for a decision.
#include <QtTest/QtTest>

#include <cstring>
#include <thread>

#include "goblin/core/graph/graph.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "labnode/kinds/graph/graph_rig.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

enum class Lie { ResearcherOutputOneUlp, LazyZeros, WitnessElement };

} // namespace

Q_DECLARE_METATYPE(Lie)

namespace {

// What a node check reported on core.
struct Reported {
    int calls = 0;
    std::int64_t task = 0;
    std::thread::id thread;
    Expected<std::vector<core::Tensor>> outputs = std::vector<core::Tensor>{};
    double seconds = -1;
    verify::CheapAuditReport report;
};

NodeChecks::ReferenceDone recordReference(Reported& into) {
    return [&into](std::int64_t task, Expected<std::vector<core::Tensor>> outputs, double seconds) {
        ++into.calls;
        into.task = task;
        into.thread = std::this_thread::get_id();
        into.outputs = std::move(outputs);
        into.seconds = seconds;
    };
}

NodeChecks::AuditDone recordAudit(Reported& into) {
    return [&into](std::int64_t task, verify::CheapAuditReport report) {
        ++into.calls;
        into.task = task;
        into.thread = std::this_thread::get_id();
        into.report = std::move(report);
    };
}

// `rows` batch rows of a tensor from `first` on, copied.
core::Tensor rowsOf(const core::Tensor& whole, std::int64_t first, std::int64_t rows) {
    core::Shape shape = whole.shape();
    const std::size_t rowBytes = whole.byteSize() / static_cast<std::size_t>(shape.at(0));
    shape[0] = rows;
    core::Tensor part = core::Tensor::allocate(whole.dtype(), shape).value();
    std::memcpy(part.bytes().data(), whole.bytes().data() + first * rowBytes,
                static_cast<std::size_t>(rows) * rowBytes);
    return part;
}

// The chunk's outputs (the researcher's, then the witness) cut from one reference run of the
// whole job's graph on every batch row at once, asked for the same values the chunk outputs.
Expected<std::vector<core::Tensor>> rowsOfWholeRun(GraphRig& g, std::size_t chunk) {
    const GraphSubmission& submission = g.job().submission;
    const GraphChunk& part = g.job().chunks.at(chunk);
    core::graph::Graph whole = submission.graph;
    whole.outputs = part.graph.outputs;
    auto plan = core::graph::validateGraph(whole);
    if (!plan)
        return tl::unexpected(plan.error());
    auto outputs = reference::runGraph(whole, *plan, valuesOf(submission.inputs));
    if (!outputs)
        return outputs;
    const auto rows =
        outputs->at(0).shape().at(0) / static_cast<std::int64_t>(g.job().chunks.size());
    std::vector<core::Tensor> cut;
    for (const core::Tensor& output : *outputs)
        cut.push_back(rowsOf(output, part.offset, rows));
    return cut;
}

// A replica's claims for the chunk with the lie told.
std::vector<core::Tensor> claimsWith(GraphRig& g, std::size_t chunk, Lie lie) {
    switch (lie) {
    case Lie::ResearcherOutputOneUlp:
        return g.lying(chunk, "v").outputs;
    case Lie::LazyZeros:
        return g.lazy(chunk, "v").outputs;
    case Lie::WitnessElement:
        break;
    }
    std::vector<core::Tensor> claimed = g.honest(chunk, "v").outputs;
    claimed.at(1).values<float>()[5] += 1.0f; // the matmul's value, the relu left honest
    return claimed;
}

} // namespace

class TestNodeChecks : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void referenceEqualsTheWholeGraphsRunOnTheTasksRows_data();
    void referenceEqualsTheWholeGraphsRunOnTheTasksRows();
    void referenceOfATaskReleasedMeanwhileComesBackButTheTaskIsNotHandedBack();
    void cheapAuditPassesHonestClaimsCheckingTheMatmulByFreivalds();
    void cheapAuditFailsALie_data();
    void cheapAuditFailsALie();
    void auditsOfOneJobRunningAtOnceEachJudgeTheirOwnClaims();
    void afterNodeCheckCountsTheSecondsAndHandsBackOnlyATaskStillWaiting();
};

void TestNodeChecks::referenceEqualsTheWholeGraphsRunOnTheTasksRows_data() {
    QTest::addColumn<int>("chunk");
    QTest::newRow("first rows") << 0;
    QTest::newRow("last rows") << 1;
}

void TestNodeChecks::referenceEqualsTheWholeGraphsRunOnTheTasksRows() {
    QFETCH(int, chunk);
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    NodeChecks checks(g.rig.context, g.book);
    const std::size_t index = static_cast<std::size_t>(chunk);
    GraphTask& task = g.task(index);
    Reported reported;
    checks.runReference(task, recordReference(reported));
    QCOMPARE(reported.calls, 0); // done runs on core, which has not run since
    QVERIFY(g.rig.node.waitUntil([&] { return reported.calls > 0; }));
    QVERIFY(g.settle());
    QCOMPARE(reported.calls, 1);
    QCOMPARE(reported.task, task.id);
    QCOMPARE(reported.thread, std::this_thread::get_id());
    QVERIFY(reported.seconds >= 0);
    QVERIFY2(reported.outputs.has_value(), reported.outputs.error().message.c_str());
    QCOMPARE(g.job().chunks.at(index).graph.outputs.size(), std::size_t{2});
    const auto whole = rowsOfWholeRun(g, index);
    QVERIFY2(whole.has_value(), whole.error().message.c_str());
    QCOMPARE(g.job().chunks.at(index).offset, std::int64_t{4} * chunk);
    // The researcher's output and the witness, each the whole run's rows bit for bit.
    QVERIFY(sameBits(*reported.outputs, *whole));
    // Checking only: the task is not touched.
    QVERIFY(!task.nodeComputing);
    QVERIFY(task.replicas.empty());
    QCOMPARE(g.job().verifySeconds, 0.0);
}

void TestNodeChecks::referenceOfATaskReleasedMeanwhileComesBackButTheTaskIsNotHandedBack() {
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    NodeChecks checks(g.rig.context, g.book);
    const std::vector<core::Tensor> expected = g.reference(1);
    const std::int64_t taskId = g.task(1).id;
    Reported reported;
    checks.runReference(g.task(1), recordReference(reported));
    g.book.remove(g.jobId); // before the worker's answer reaches core
    QVERIFY(g.rig.node.waitUntil([&] { return reported.calls > 0; }));
    QCOMPARE(reported.task, taskId);
    QVERIFY(reported.outputs.has_value());
    QVERIFY(sameBits(*reported.outputs, expected));
    QVERIFY(checks.afterNodeCheck(taskId, reported.seconds) == nullptr);
    QVERIFY(g.book.job(g.jobId) == nullptr);
}

void TestNodeChecks::cheapAuditPassesHonestClaimsCheckingTheMatmulByFreivalds() {
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    NodeChecks checks(g.rig.context, g.book);
    GraphTask& task = g.task(0);
    Reported reported;
    checks.cheapAudit(task, g.honest(0, "v").outputs, verify::GreyZone::RecomputeBitwise,
                      recordAudit(reported));
    QCOMPARE(reported.calls, 0);
    QVERIFY(g.rig.node.waitUntil([&] { return reported.calls > 0; }));
    QVERIFY(g.settle());
    QCOMPARE(reported.calls, 1);
    QCOMPARE(reported.task, task.id);
    QCOMPARE(reported.thread, std::this_thread::get_id());
    QVERIFY2(reported.report.passed, reported.report.reason.c_str());
    QVERIFY(!reported.report.reason.empty());
    // The witnessed matmul checked, not recomputed.
    QCOMPARE(reported.report.checked, std::size_t{1});
    QCOMPARE(reported.report.recomputed, std::size_t{0});
    QVERIFY(reported.report.maxErrorRatio <= 1.0);
    QCOMPARE(g.job().verifySeconds, 0.0); // counted by afterNodeCheck alone
}

void TestNodeChecks::cheapAuditFailsALie_data() {
    QTest::addColumn<Lie>("lie");
    QTest::addColumn<int>("chunk");
    QTest::addColumn<QString>("caught");
    QTest::newRow("researcher output one ulp up")
        << Lie::ResearcherOutputOneUlp << 0
        << "output 0 (value 3) differs from the node's evaluation";
    QTest::newRow("lazy zeros") << Lie::LazyZeros << 1 << "node 2 (matmul): ";
    QTest::newRow("witness element off by one") << Lie::WitnessElement << 1 << "node 2 (matmul): ";
}

void TestNodeChecks::cheapAuditFailsALie() {
    QFETCH(Lie, lie);
    QFETCH(int, chunk);
    QFETCH(QString, caught);
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    NodeChecks checks(g.rig.context, g.book);
    const std::size_t index = static_cast<std::size_t>(chunk);
    const std::vector<core::Tensor> claimed = claimsWith(g, index, lie);
    QVERIFY(!sameBits(claimed, g.reference(index)));
    Reported reported;
    checks.cheapAudit(g.task(index), claimed, verify::GreyZone::RecomputeBitwise,
                      recordAudit(reported));
    QVERIFY(g.rig.node.waitUntil([&] { return reported.calls > 0; }));
    QCOMPARE(reported.task, g.task(index).id);
    QVERIFY(!reported.report.passed);
    // Caught where the lie is: a checked matmul's claim, or an output recomputed bit for bit.
    QVERIFY2(reported.report.reason.find(caught.toStdString()) != std::string::npos,
             reported.report.reason.c_str());
}

void TestNodeChecks::auditsOfOneJobRunningAtOnceEachJudgeTheirOwnClaims() {
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    NodeChecks checks(g.rig.context, g.book);
    // Both on the workers at once, sharing the probes of the job's weights.
    Reported honest, lying;
    checks.cheapAudit(g.task(0), g.honest(0, "v").outputs, verify::GreyZone::RecomputeBitwise,
                      recordAudit(honest));
    checks.cheapAudit(g.task(1), claimsWith(g, 1, Lie::WitnessElement),
                      verify::GreyZone::RecomputeBitwise, recordAudit(lying));
    QVERIFY(g.rig.node.waitUntil([&] { return honest.calls > 0 && lying.calls > 0; }));
    QCOMPARE(honest.task, g.task(0).id);
    QCOMPARE(lying.task, g.task(1).id);
    QVERIFY2(honest.report.passed, honest.report.reason.c_str());
    QVERIFY(!lying.report.passed);
    // A later audit of the other task, with the probes made, passes its honest claims.
    Reported later;
    checks.cheapAudit(g.task(1), g.honest(1, "v").outputs, verify::GreyZone::CheckExactly,
                      recordAudit(later));
    QVERIFY(g.rig.node.waitUntil([&] { return later.calls > 0; }));
    QVERIFY2(later.report.passed, later.report.reason.c_str());
    QCOMPARE(later.report.checked, std::size_t{1});
}

void TestNodeChecks::afterNodeCheckCountsTheSecondsAndHandsBackOnlyATaskStillWaiting() {
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    NodeChecks checks(g.rig.context, g.book);
    GraphTask& task = g.task(0);
    GraphTask& other = g.task(1);
    other.nodeComputing = true;
    // Undecided: handed back, no longer computed by the node, its seconds counted to the job.
    task.nodeComputing = true;
    QVERIFY(checks.afterNodeCheck(task.id, 0.25) == &task);
    QVERIFY(!task.nodeComputing);
    QCOMPARE(g.job().verifySeconds, 0.25);
    // Being decided: counted, not handed back.
    task.nodeComputing = true;
    g.book.startDeciding(task, "taken by the test");
    QVERIFY(checks.afterNodeCheck(task.id, 0.5) == nullptr);
    QVERIFY(!task.nodeComputing);
    QCOMPARE(g.job().verifySeconds, 0.75);
    // Decided: likewise.
    g.book.markDecided(task);
    QVERIFY(checks.afterNodeCheck(task.id, 0.125) == nullptr);
    QCOMPARE(g.job().verifySeconds, 0.875);
    QVERIFY(other.nodeComputing); // another task's check is still out
    // Its job ended: not handed back either.
    g.book.endJob(g.jobId, "cancelled by the test");
    QVERIFY(checks.afterNodeCheck(other.id, 0.125) == nullptr);
    QCOMPARE(g.job().verifySeconds, 1.0);
    // Released: nothing to count to.
    const std::int64_t released = other.id;
    g.book.remove(g.jobId);
    QVERIFY(checks.afterNodeCheck(released, 1.0) == nullptr);
}

QTEST_GUILESS_MAIN(TestNodeChecks)
#include "test_node_checks.moc"
