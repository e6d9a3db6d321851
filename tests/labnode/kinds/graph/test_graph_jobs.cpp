// Tests of the graph job kind through the Coordinator with fake peers on a real SQLite file: two
// volunteers that agree decide each task, canonical backends bit for bit; a liar is caught by the
// node's tie-break and quarantined; colluders on probation are audited; a quarantine rechecks the
// decided tasks of running jobs; a wrong shape is rejected at the gate; a restarted node
// resumes the job with decided tasks kept and attempt numbers that never repeat; a matmul chunk
// carries its witness to volunteers but not to the researcher, and cheap audits catch liars on it.
#include <QtTest/QtTest>

#include <cmath>
#include <set>

#include "goblin/core/graph/graph_json.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "labnode/fake_answers.hpp"
#include "support/random_tensors.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

net::Message honest(const net::Message& task) {
    return honestRelu(task);
}

bool outputIsRelu(const FakePeerLink& researcher, const core::Tensor& x) {
    const auto done = researcher.sentOfType("job_done");
    if (done.size() != 1 || done[0].tensors.size() != 1)
        return false;
    const core::Tensor expected = relu(x);
    const auto got = done[0].tensors[0]->values<float>();
    return std::equal(got.begin(), got.end(), expected.values<float>().begin(),
                      expected.values<float>().end());
}

CoordinatorSettings settings() {
    CoordinatorSettings chosen;
    // Decisions by the volunteers alone, unless they disagree: no probation, no audit floor.
    chosen.trust.probationAudits = 0;
    chosen.trust.auditFloor = 0.0;
    chosen.trust.sharedAddressRate = 0.0;
    return chosen;
}

std::string jobIdOf(const FakePeerLink& researcher) {
    return std::string(researcher.sentOfType("job_accepted").at(0).control.at("job").as_string());
}

} // namespace

class TestGraphJobs : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void agreeingVolunteersDecideEachTask();
    void aVolunteerHoldsOnlyTheTasksItsMemoryHolds();
    void aStageDecidedByTheNodesAuditIsLeasedAtOnce();
    void liarIsCaughtByTheNodeAndQuarantined();
    void colludersOnProbationAreAuditedAndQuarantined();
    void canonicalBackendsMustAgreeBitForBit();
    void quarantineRechecksDecidedTasks();
    void wrongShapeIsRejectedAtTheGate();
    void restartKeepsDecidedTasksAndAttempts();
    void witnessesGoToVolunteersNotToTheResearcher();
    void cheapAuditCatchesAgreeingLiarsOnAWitness();
    void nonCanonicalReplicasAreAuditedInFull();
};

void TestGraphJobs::agreeingVolunteersDecideEachTask() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    auto& one = cluster.connectVolunteer(2, true);
    auto& two = cluster.connectVolunteer(2, true, "opencl-graph");
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 3);
    cluster.fromResearcher(submitRelu(x));
    QVERIFY(node.waitUntil([&] {
        cluster.answer(one, honest);
        cluster.answer(two, honest);
        return researcher->count("job_done") == 1;
    }));
    QVERIFY(outputIsRelu(*researcher, x));
    QCOMPARE(
        researcher->sentOfType("job_accepted").at(0).control.at("tasks").to_number<std::int64_t>(),
        std::int64_t{2});
    const auto summary = researcher->sentOfType("job_done")[0].control.at("summary").as_object();
    QCOMPARE(summary.at("verdicts").at("accepted").to_number<std::int64_t>(), std::int64_t{4});
    QCOMPARE(summary.at("verdicts").at("rejected").to_number<std::int64_t>(), std::int64_t{0});
    QCOMPARE(one.link->count("task"), std::size_t{2}); // each computed every chunk once
    QCOMPARE(two.link->count("task"), std::size_t{2});
    QCOMPARE(one.verdicts(), (std::vector<std::string>{"accepted", "accepted"}));
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM task_leases WHERE kind = 'graph'"),
             std::int64_t{4});
    QCOMPARE(queryInt(node.store,
                      "SELECT count(*) FROM graph_results WHERE method = 'replica-agreement'"),
             std::int64_t{4});
    QCOMPARE(researcher->count("progress"), std::size_t{2});
}

// A relu chunk holds its 48-byte input while it waits and 96 bytes (input and output) while it
// runs: two held at once need 144. Volunteers with two slots lending 140 bytes get one task at a
// time, the next once the first is answered.
void TestGraphJobs::aVolunteerHoldsOnlyTheTasksItsMemoryHolds() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    auto& one = cluster.connectVolunteer(2, true, "cpu-eigen", "10.0.0.1", 140);
    auto& two = cluster.connectVolunteer(2, true, "opencl-graph", "10.0.0.2", 140);
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 3);
    cluster.fromResearcher(submitRelu(x));
    QVERIFY(node.waitUntil([&] { return one.link->count("task") + two.link->count("task") >= 2; }));
    node.poll();
    QCOMPARE(one.link->count("task"), std::size_t{1});
    QCOMPARE(two.link->count("task"), std::size_t{1});
    QVERIFY(node.waitUntil([&] {
        cluster.answer(one, honest);
        cluster.answer(two, honest);
        return researcher->count("job_done") == 1;
    }));
    QVERIFY(outputIsRelu(*researcher, x));
    QCOMPARE(one.link->count("task"), std::size_t{2});
    QCOMPARE(two.link->count("task"), std::size_t{2});
}

// relu then neg over x [8, 3] in two chunks; volunteers lending 100 bytes get each chunk as two
// stages (96 bytes each). Every task is audited by the node on a worker, and the scheduler looks
// for expired leases once an hour: the job ends only if each decision wakes the scheduler to
// lease the stage that reads it.
void TestGraphJobs::aStageDecidedByTheNodesAuditIsLeasedAtOnce() {
    NodeHarness node;
    CoordinatorSettings chosen = settings();
    chosen.trust.probationAudits = 1000; // every task audited
    chosen.leaseCheckSeconds = 3600.0;
    FakeCluster cluster(node, chosen);
    auto researcher = cluster.connectResearcher();
    auto& one = cluster.connectVolunteer(2, true, "cpu-eigen", "10.0.0.1", 100);
    auto& two = cluster.connectVolunteer(2, true, "opencl-graph", "10.0.0.2", 100);
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 3);
    net::Message submission = submitRelu(x);
    auto& graph = submission.control.at("graph").as_object();
    graph["nodes"].as_array().push_back(
        {{"id", 2}, {"op", "neg"}, {"args", {1}}, {"attrs", boost::json::object{}}});
    graph["outputs"] = {2};
    cluster.fromResearcher(std::move(submission));
    const auto run = [](const net::Message& task) { return answerWith(task, runTaskGraph(task)); };
    QVERIFY(node.waitUntil([&] {
        cluster.answer(one, run);
        cluster.answer(two, run);
        return researcher->count("job_done") == 1;
    }));
    QCOMPARE(researcher->sentOfType("job_accepted").at(0).control.at("tasks").to_number<int>(), 4);
    const auto done = researcher->sentOfType("job_done").at(0);
    const core::Tensor expected = relu(x);
    const auto got = done.tensors.at(0)->values<float>();
    for (std::size_t i = 0; i < got.size(); ++i)
        QCOMPARE(got[i], -expected.values<float>()[i]);
}

void TestGraphJobs::liarIsCaughtByTheNodeAndQuarantined() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    auto& liar = cluster.connectVolunteer(2, true, "opencl-graph", "10.0.0.1");
    auto& first = cluster.connectVolunteer(2, true, "cpu-eigen", "10.0.0.2");
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 4);
    cluster.fromResearcher(submitRelu(x));
    QVERIFY(node.waitUntil(
        [&] { return liar.link->count("task") == 2 && first.link->count("task") == 2; }));
    const std::string liarId = liar.id();
    cluster.answer(liar, lyingRelu);
    cluster.answer(first, honest);
    // They disagree: the node decides (a third volunteer could be the liar's second identity).
    QVERIFY(node.waitUntil([&] { return researcher->count("job_done") == 1; }));
    QVERIFY(node.logged("the volunteers disagree; the node decides"));
    QVERIFY(outputIsRelu(*researcher, x));
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE verdict = 'rejected' "
                                  "AND volunteer_id = '" +
                                      liarId + "'"),
             std::int64_t{2});
    QVERIFY(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE method = "
                                 "'node-tiebreak' AND verdict = 'rejected'") >= 1);
    QVERIFY(node.waitUntil([&] { return liar.link->closed().has_value(); }));
    QCOMPARE(liar.link->closed()->code, ErrorCode::Banned);
    QVERIFY(quarantined(node, liarId));
    QVERIFY(!first.link->closed().has_value());
}

void TestGraphJobs::colludersOnProbationAreAuditedAndQuarantined() {
    NodeHarness node;
    FakeCluster cluster(node, CoordinatorSettings{}); // default trust: new identities audited
    auto researcher = cluster.connectResearcher();
    auto& one = cluster.connectVolunteer(2, true, "opencl-graph", "10.0.0.1");
    auto& two = cluster.connectVolunteer(2, true, "opencl-graph", "10.0.0.2");
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 8);
    cluster.fromResearcher(submitRelu(x));
    QVERIFY(node.waitUntil(
        [&] { return one.link->count("task") == 2 && two.link->count("task") == 2; }));
    const std::string ids[] = {one.id(), two.id()};
    // The same wrong answer from both, from their first task on.
    cluster.answer(one, lyingRelu);
    cluster.answer(two, lyingRelu);
    QVERIFY(node.waitUntil([&] { return researcher->count("job_done") == 1; }));
    QVERIFY(outputIsRelu(*researcher, x));
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE verdict = 'accepted'"),
             std::int64_t{0});
    // The first audit catches both; their replicas of the other task are then dropped.
    QVERIFY(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE method = 'node-audit' "
                                 "AND verdict = 'rejected'") >= 2);
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE verdict = 'rejected' "
                                  "AND method IN ('node-audit', 'quarantine')"),
             std::int64_t{4});
    for (const std::string& id : ids)
        QVERIFY(quarantined(node, id));
    const auto summary = researcher->sentOfType("job_done")[0].control.at("summary").as_object();
    QVERIFY(summary.at("node_caught").to_number<std::int64_t>() >= 1);
}

void TestGraphJobs::canonicalBackendsMustAgreeBitForBit() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    auto& reference = cluster.connectVolunteer(2, true, "cpu-reference", "10.0.0.1");
    auto& opencl = cluster.connectVolunteer(2, true, "opencl-graph", "10.0.0.2");
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 9);
    cluster.fromResearcher(submitRelu(x));
    // One ulp off on one element: within any tolerance, but canonical backends must be equal.
    auto ulpOff = [](const net::Message& task) {
        core::Tensor y = relu(*task.tensors.at(0));
        float& first = y.values<float>()[0];
        first = std::nextafter(first, 10.0f);
        return resultFor(task, {std::make_shared<const core::Tensor>(std::move(y))},
                         "opencl-graph");
    };
    auto canonical = [](const net::Message& task) {
        return resultFor(task, {std::make_shared<const core::Tensor>(relu(*task.tensors.at(0)))},
                         "cpu-reference");
    };
    QVERIFY(node.waitUntil([&] {
        cluster.answer(reference, canonical);
        cluster.answer(opencl, ulpOff);
        return researcher->count("job_done") == 1;
    }));
    QVERIFY(outputIsRelu(*researcher, x));
    QVERIFY(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE verdict = 'rejected' "
                                 "AND backend = 'opencl-graph' AND reason LIKE "
                                 "'%canonical backends differ%' OR method = 'node-tiebreak'") >= 1);
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE verdict = 'accepted' "
                                  "AND backend = 'opencl-graph'"),
             std::int64_t{0});
}

void TestGraphJobs::quarantineRechecksDecidedTasks() {
    NodeHarness node;
    FakeCluster cluster(node, settings()); // no audits: the colluders' first lie is accepted
    auto researcher = cluster.connectResearcher();
    auto& one = cluster.connectVolunteer(2, true, "opencl-graph", "10.0.0.1");
    auto& two = cluster.connectVolunteer(2, true, "opencl-graph", "10.0.0.2");
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 11);
    cluster.fromResearcher(submitRelu(x));
    QVERIFY(node.waitUntil(
        [&] { return one.link->count("task") == 2 && two.link->count("task") == 2; }));
    const std::string oneId = one.id(), twoId = two.id();
    const auto firstTask = one.link->sentOfType("task")[0];
    const std::int64_t decided = firstTask.control.at("task").to_number<std::int64_t>();
    auto frameOf = [&](FakeVolunteer& volunteer, bool first) {
        for (const auto& frame : volunteer.link->sentOfType("task"))
            if ((frame.control.at("task").to_number<std::int64_t>() == decided) == first)
                return frame;
        return net::Message{};
    };
    for (auto* volunteer : {&one, &two})
        cluster.coordinator.onMessage(volunteer->peer, lyingRelu(frameOf(*volunteer, true)));
    QVERIFY(node.waitUntil([&] { return researcher->count("progress") == 1; }));
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE verdict = 'accepted'"),
             std::int64_t{2}); // the pair's lie got through, for now
    // One of them is caught on the other task: every task it took part in is checked again.
    cluster.coordinator.onMessage(one.peer, misshapenResult(frameOf(one, false)));
    cluster.coordinator.onMessage(two.peer, honest(frameOf(two, false)));
    auto& third = cluster.connectVolunteer(2, true, "cpu-eigen", "10.0.0.3");
    QVERIFY(node.waitUntil([&] {
        cluster.answer(third, honest);
        return researcher->count("job_done") == 1;
    }));
    QVERIFY(outputIsRelu(*researcher, x));
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE task_id = " +
                                      std::to_string(decided) +
                                      " AND verdict = 'rejected' AND method = 'node-recheck'"),
             std::int64_t{2});
    for (const std::string& id : {oneId, twoId})
        QVERIFY(quarantined(node, id));
}

void TestGraphJobs::wrongShapeIsRejectedAtTheGate() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    auto& bad = cluster.connectVolunteer(2, true, "opencl-graph");
    auto& good = cluster.connectVolunteer(2, true);
    auto& other = cluster.connectVolunteer(2, true);
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 5);
    cluster.fromResearcher(submitRelu(x));
    QVERIFY(node.waitUntil([&] {
        cluster.answer(bad, misshapenResult);
        cluster.answer(good, honest);
        cluster.answer(other, honest);
        return researcher->count("job_done") == 1;
    }));
    QVERIFY(outputIsRelu(*researcher, x));
    QVERIFY(!bad.verdicts().empty());
    for (const std::string& verdict : bad.verdicts())
        QCOMPARE(verdict, std::string("rejected"));
    QVERIFY(queryInt(node.store,
                     "SELECT count(*) FROM graph_results WHERE method = 'shape-gate'") >= 1);
}

void TestGraphJobs::restartKeepsDecidedTasksAndAttempts() {
    const NodeFiles files;
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 6);
    std::string job;
    std::int64_t decidedTask = 0;
    std::int64_t highestAttempt = 0;
    {
        NodeHarness node(files.db, files.blobs);
        FakeCluster cluster(node, settings());
        auto researcher = cluster.connectResearcher();
        auto& one = cluster.connectVolunteer(2, true);
        auto& two = cluster.connectVolunteer(2, true, "opencl-graph");
        cluster.fromResearcher(submitRelu(x));
        QVERIFY(node.waitUntil(
            [&] { return one.link->count("task") == 2 && two.link->count("task") == 2; }));
        job = jobIdOf(*researcher);
        // Both answer the first chunk only; the node dies with the second chunk's leases out.
        const auto task = one.link->sentOfType("task")[0];
        decidedTask = task.control.at("task").to_number<std::int64_t>();
        for (auto* volunteer : {&one, &two})
            for (const auto& frame : volunteer->link->sentOfType("task"))
                if (frame.control.at("task").to_number<std::int64_t>() == decidedTask)
                    cluster.coordinator.onMessage(volunteer->peer, honest(frame));
        QVERIFY(node.waitUntil([&] { return researcher->count("progress") == 1; }));
        highestAttempt =
            queryInt(node.store, "SELECT max(attempt) FROM task_leases WHERE kind = 'graph'");
    }
    NodeHarness node(files.db, files.blobs);
    FakeCluster cluster(node, settings());
    QVERIFY(node.logged("graph job " + job + " resumed: 1 of 2 task(s) already decided"));
    auto researcher = cluster.connectResearcher();
    auto& one = cluster.connectVolunteer(2, true);
    auto& two = cluster.connectVolunteer(2, true, "opencl-graph");
    cluster.fromResearcher(control({{"type", "fetch"}, {"id", 3}, {"job", job}}));
    QVERIFY(node.waitUntil([&] {
        cluster.answer(one, honest);
        cluster.answer(two, honest);
        return researcher->count("job_done") == 1;
    }));
    QVERIFY(outputIsRelu(*researcher, x));
    for (auto* volunteer : {&one, &two}) {
        const auto tasks = volunteer->link->sentOfType("task");
        QCOMPARE(tasks.size(), std::size_t{1});
        QVERIFY2(tasks[0].control.at("task").to_number<std::int64_t>() != decidedTask,
                 "a decided task was computed again");
        QVERIFY2(tasks[0].control.at("attempt").to_number<std::int64_t>() > highestAttempt,
                 "an attempt number was reused");
    }
}

namespace {

CoordinatorSettings cheapAuditsOnly() {
    CoordinatorSettings chosen; // default trust: new identities are audited on every task
    chosen.trust.fullAuditShare = 0.0;
    return chosen;
}

} // namespace

void TestGraphJobs::witnessesGoToVolunteersNotToTheResearcher() {
    NodeHarness node;
    FakeCluster cluster(node, cheapAuditsOnly());
    auto researcher = cluster.connectResearcher();
    auto& one = cluster.connectVolunteer(2, true, "cpu-reference", "10.0.0.1");
    auto& two = cluster.connectVolunteer(2, true, "cpu-reference", "10.0.0.2");
    const auto inputs = mlpInputs(21);
    const core::Tensor &x = inputs.first, &w = inputs.second;
    cluster.fromResearcher(submitMatmulRelu(x, w));
    std::set<std::size_t> taskOutputs;
    const auto honestly = [&](const net::Message& task) {
        taskOutputs.insert(task.control.at("graph").at("outputs").as_array().size());
        return answerWith(task, runTaskGraph(task));
    };
    QVERIFY(node.waitUntil([&] {
        cluster.answer(one, honestly);
        cluster.answer(two, honestly);
        return researcher->count("job_done") == 1;
    }));
    QCOMPARE(taskOutputs, (std::set<std::size_t>{2})); // relu, then the matmul's witness
    const auto done = researcher->sentOfType("job_done");
    QCOMPARE(done[0].tensors.size(), std::size_t{1}); // the researcher's output only
    const core::Tensor& got = *done[0].tensors[0];
    QCOMPARE(got.shape(), (core::Shape{kMlpRows, kMlpCols}));
    // The whole graph on the whole batch, by the reference (rows do not interact): equal.
    const core::Tensor product =
        reference::runOp(core::ops::OpCode::Matmul, std::vector<core::Tensor>{x, w}, {}).value();
    const core::Tensor expected = relu(product);
    QVERIFY(std::equal(got.values<float>().begin(), got.values<float>().end(),
                       expected.values<float>().begin(), expected.values<float>().end()));
    // Every task was audited (probation), cheaply: no node replica, audits credited.
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE method = 'node-audit' "
                                  "AND verdict = 'accepted' AND reason LIKE 'cheap audit:%'"),
             std::int64_t{4});
    QCOMPARE(queryInt(node.store, "SELECT sum(audits_passed) FROM volunteer_trust"),
             std::int64_t{4});
}

void TestGraphJobs::cheapAuditCatchesAgreeingLiarsOnAWitness() {
    NodeHarness node;
    FakeCluster cluster(node, cheapAuditsOnly());
    auto researcher = cluster.connectResearcher();
    auto& one = cluster.connectVolunteer(2, true, "cpu-reference", "10.0.0.1");
    auto& two = cluster.connectVolunteer(2, true, "cpu-reference", "10.0.0.2");
    const auto inputs = mlpInputs(23);
    const core::Tensor &x = inputs.first, &w = inputs.second;
    cluster.fromResearcher(submitMatmulRelu(x, w));
    // Both return the same wrong matmul value and a relu consistent with it.
    const auto lie = [](const net::Message& task) {
        std::vector<core::Tensor> outputs = runTaskGraph(task);
        core::Tensor witness = core::Tensor::allocate(core::DType::F32, outputs[1].shape()).value();
        std::copy(outputs[1].bytes().begin(), outputs[1].bytes().end(), witness.bytes().begin());
        witness.values<float>()[1] = std::abs(witness.values<float>()[1]) + 3.0f;
        outputs[0] = relu(witness);
        outputs[1] = witness;
        return answerWith(task, std::move(outputs));
    };
    QVERIFY(node.waitUntil([&] {
        cluster.answer(one, lie);
        cluster.answer(two, lie);
        return researcher->count("job_done") == 1;
    }));
    QVERIFY(quarantined(node, one.id()) && quarantined(node, two.id()));
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE verdict = 'accepted'"),
             std::int64_t{0});
    const core::Tensor expected = relu(
        reference::runOp(core::ops::OpCode::Matmul, std::vector<core::Tensor>{x, w}, {}).value());
    const core::Tensor& got = *researcher->sentOfType("job_done")[0].tensors.at(0);
    QVERIFY(std::equal(got.values<float>().begin(), got.values<float>().end(),
                       expected.values<float>().begin(), expected.values<float>().end()));
}

void TestGraphJobs::nonCanonicalReplicasAreAuditedInFull() {
    NodeHarness node;
    FakeCluster cluster(node, cheapAuditsOnly());
    auto researcher = cluster.connectResearcher();
    auto& one = cluster.connectVolunteer(2, true, "cpu-eigen", "10.0.0.1");
    auto& two = cluster.connectVolunteer(2, true, "cpu-eigen", "10.0.0.2");
    const auto inputs = mlpInputs(25);
    cluster.fromResearcher(submitMatmulRelu(inputs.first, inputs.second));
    const auto eigen = [](const net::Message& task) {
        return answerWith(task, runTaskGraph(task), "cpu-eigen");
    };
    QVERIFY(node.waitUntil([&] {
        cluster.answer(one, eigen);
        cluster.answer(two, eigen);
        return researcher->count("job_done") == 1;
    }));
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE method = 'node-audit' "
                                  "AND verdict = 'accepted' AND reason NOT LIKE 'cheap audit:%'"),
             std::int64_t{4});
}

QTEST_APPLESS_MAIN(TestGraphJobs)
#include "test_graph_jobs.moc"
