// Tests of the entry that hands a graph task to its decider (graph_decisions.hpp) on a real
// GraphBook: a replicated job's task waits for two replicas and is decided when they agree; a
// freivalds job's task is decided on its one replica by the node's check; a task being judged,
// computed by the node or decided is not handed to a decider again; a malformed replica is
// rejected at once and another opinion wanted; the node's own computation decides a task; a
// quarantine drops the caught volunteer's replicas from undecided tasks and rechecks the decided
// tasks of running jobs it took part in. What the deciders themselves promise is tested beside
// them (test_replica_decider, test_checked_alone_decider, test_quarantine_recheck).
#include <QtTest/QtTest>

#include <chrono>
#include <functional>
#include <thread>

#include "labnode/kinds/graph/graph_rig.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

Q_DECLARE_METATYPE(goblin::labnode::GraphVerification)
Q_DECLARE_METATYPE(goblin::labnode::JobState)

namespace {

// Runs the core thread one handler at a time until `done` holds: the test sees the state between
// two handlers (NodeHarness::waitUntil may run a worker's answer in the same poll). False after a
// generous deadline.
bool stepUntil(NodeHarness& node, const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline)
            return false;
        node.core.restart();
        if (node.core.poll_one() == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

std::string stateOf(GraphRig& g, const GraphTask& task) {
    return std::string(taskStateName(g.book.state(task)));
}

// One opinion of the task leased from the engine to the volunteer, which is then involved in it
// (as the task source leases it). Its attempt; 0 when the engine leased nothing.
std::int64_t leaseTo(GraphRig& g, GraphTask& task, const std::string& volunteer,
                     const std::string& address) {
    VolunteerInfo info;
    info.volunteerId = volunteer;
    info.backend = "cpu-reference";
    info.address = address;
    info.graphs = true;
    const auto leased = g.book.leaseFor(
        info, VolunteerLoad{}, [](std::int64_t, const std::string&) { return false; },
        [&](std::int64_t id) { return id == task.id; });
    if (!leased)
        return 0;
    task.involved.insert(volunteer);
    task.addresses.insert(address);
    return leased->attempt;
}

// The leased attempt's replica arrives and passed the shape gate.
void arrive(GraphRig& g, GraphTask& task, verify::Replica replica, std::int64_t attempt,
            const std::string& address) {
    replica.attempt = attempt;
    replica.address = address;
    g.decisions.addReplica(task, std::move(replica), 0);
}

Lease leaseOf(const GraphTask& task, std::int64_t attempt, const std::string& volunteer) {
    Lease lease;
    lease.kind = TaskVerdicts::kOp;
    lease.task = task.id;
    lease.attempt = attempt;
    lease.volunteerId = volunteer;
    lease.backend = "cpu-reference";
    return lease;
}

std::string ofTask(const GraphTask& task, const std::string& more = {}) {
    return "task_id = " + std::to_string(task.id) + (more.empty() ? "" : " AND " + more);
}

} // namespace

class TestGraphDecisions : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void replicatedTaskIsNotDecidedOnOneReplicaAndIsWhenTwoAgree();
    void freivaldsTaskIsDecidedOnItsOneReplicaByTheNodesCheck();
    void lieArrivingWhileThePairIsJudgedIsJudgedOnceWithIt();
    void replicasArrivingWhileTheNodeComputesWaitForItsOutputs();
    void replicaArrivingWhileTheNodeChecksTheFirstIsNotJudged();
    void replicaArrivingAfterTheDecisionIsNotJudged_data();
    void replicaArrivingAfterTheDecisionIsNotJudged();
    void malformedReplicaIsRejectedAtOnceAndAnotherOpinionWanted_data();
    void malformedReplicaIsRejectedAtOnceAndAnotherOpinionWanted();
    void computeOnNodeDecidesWithTheNodesOutputs_data();
    void computeOnNodeDecidesWithTheNodesOutputs();
    void quarantineDropsTheCaughtReplicaFromAnUndecidedTask();
    void quarantineDuringTheNodesCheckLeavesTheDropToTheCheck();
    void quarantineRechecksDecidedTasksOfRunningJobsItTookPartIn_data();
    void quarantineRechecksDecidedTasksOfRunningJobsItTookPartIn();
};

void TestGraphDecisions::replicatedTaskIsNotDecidedOnOneReplicaAndIsWhenTwoAgree() {
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& task = g.task(0);
    const std::int64_t one = g.add(task, g.honest(0, "v-one"), "10.0.0.1");
    // Not handed to the node's check (which would start at once) nor compared with nothing.
    QVERIFY(!task.nodeComputing);
    QVERIFY(!task.judging);
    QVERIFY(g.settle());
    QCOMPARE(g.recorded.decided[task.id], 0);
    QCOMPARE(g.countResults(ofTask(task)), std::int64_t{0});
    QCOMPARE(stateOf(g, task), std::string("queued"));
    QVERIFY(g.storedText(task.id).empty());
    const std::int64_t two = g.add(task, g.honest(0, "v-two"), "10.0.0.2");
    QVERIFY(task.judging); // the pair's comparison began
    QVERIFY(g.waitDecided(0));
    QCOMPARE(g.verdictOf(task.id, one), std::string("accepted replica-agreement"));
    QCOMPARE(g.verdictOf(task.id, two), std::string("accepted replica-agreement"));
    QCOMPARE(stateOf(g, task), std::string("decided"));
    QVERIFY(sameBits(g.storedOutputs(task.id), researcherOutputs(g.reference(0))));
    QCOMPARE(g.recorded.decided[g.task(1).id], 0);
    QVERIFY(g.recorded.jobFailures.empty());
}

void TestGraphDecisions::freivaldsTaskIsDecidedOnItsOneReplicaByTheNodesCheck() {
    GraphRig g(noAudits(), GraphVerification::Freivalds);
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& task = g.task(1);
    const std::int64_t attempt = g.add(task, g.honest(1, "v-one"));
    // Handed to the node's check at once, not left waiting for a second replica.
    QVERIFY(task.nodeComputing);
    QVERIFY(!task.judging);
    QVERIFY(g.waitDecided(1));
    QCOMPARE(g.verdictOf(task.id, attempt), std::string("accepted node-audit"));
    QCOMPARE(g.countResults(ofTask(task)), std::int64_t{1});
    QCOMPARE(stateOf(g, task), std::string("decided"));
    QVERIFY(!task.nodeOutputs); // the volunteer's outputs, checked
    QVERIFY(sameBits(g.storedOutputs(task.id), researcherOutputs(g.reference(1))));
    QVERIFY(g.recorded.opinionsWanted.empty());
    QVERIFY(g.recorded.jobFailures.empty());
}

void TestGraphDecisions::lieArrivingWhileThePairIsJudgedIsJudgedOnceWithIt() {
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& task = g.task(0);
    const std::int64_t one = g.add(task, g.honest(0, "v-one"), "10.0.0.1");
    const std::int64_t two = g.add(task, g.honest(0, "v-two"), "10.0.0.2");
    QVERIFY(task.judging);
    const std::int64_t late = g.add(task, g.lying(0, "v-late"), "10.0.0.3");
    QVERIFY(task.judging);
    QVERIFY(!task.nodeComputing);
    QVERIFY(g.waitDecided(0));
    QVERIFY(g.settle());
    // The pair's agreement did not decide alone: the lie made the node decide all three.
    QCOMPARE(g.verdictOf(task.id, one), std::string("accepted node-tiebreak"));
    QCOMPARE(g.verdictOf(task.id, two), std::string("accepted node-tiebreak"));
    QCOMPARE(g.verdictOf(task.id, late), std::string("rejected node-tiebreak"));
    QCOMPARE(g.countResults(ofTask(task)), std::int64_t{3});
    QCOMPARE(g.recorded.decided[task.id], 1);
    QVERIFY(sameBits(g.storedOutputs(task.id), researcherOutputs(g.reference(0))));
    QVERIFY(g.recorded.jobFailures.empty());
}

void TestGraphDecisions::replicasArrivingWhileTheNodeComputesWaitForItsOutputs() {
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& task = g.task(0);
    g.decisions.computeOnNode(task);
    QVERIFY(task.nodeComputing);
    const std::int64_t honest = g.add(task, g.honest(0, "v-honest"), "10.0.0.1");
    const std::int64_t liar = g.add(task, g.lying(0, "v-liar"), "10.0.0.2");
    QVERIFY(!task.judging); // two replicas in, yet not compared: the node's outputs are awaited
    QVERIFY(task.nodeComputing);
    QCOMPARE(task.replicas.size(), std::size_t{2});
    QVERIFY(g.waitDecided(0));
    QVERIFY(g.settle());
    QCOMPARE(g.verdictOf(task.id, honest), std::string("accepted node-compute"));
    QCOMPARE(g.verdictOf(task.id, liar), std::string("rejected node-compute"));
    QCOMPARE(g.recorded.decided[task.id], 1);
    QVERIFY(task.nodeOutputs);
    QVERIFY(sameBits(g.storedOutputs(task.id), researcherOutputs(g.reference(0))));
    QVERIFY(g.recorded.jobFailures.empty());
}

void TestGraphDecisions::replicaArrivingWhileTheNodeChecksTheFirstIsNotJudged() {
    GraphRig g(noAudits(), GraphVerification::Freivalds);
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& task = g.task(0);
    const std::int64_t first = g.add(task, g.honest(0, "v-first"), "10.0.0.1");
    QVERIFY(task.nodeComputing);
    const std::int64_t second = g.add(task, g.lying(0, "v-second"), "10.0.0.2");
    QVERIFY(g.waitDecided(0));
    QVERIFY(g.settle());
    QCOMPARE(g.verdictOf(task.id, first), std::string("accepted node-audit"));
    // Never checked: no verdict, and its lie caught nobody.
    QCOMPARE(g.verdictOf(task.id, second), std::string());
    QCOMPARE(g.countResults(ofTask(task)), std::int64_t{1});
    QVERIFY(!g.trust.isQuarantined("v-second"));
    QCOMPARE(g.recorded.decided[task.id], 1);
    QCOMPARE(task.replicas.size(), std::size_t{1});
    QVERIFY(sameBits(g.storedOutputs(task.id), researcherOutputs(g.reference(0))));
    QVERIFY(g.recorded.jobFailures.empty());
}

void TestGraphDecisions::replicaArrivingAfterTheDecisionIsNotJudged_data() {
    QTest::addColumn<GraphVerification>("verification");
    QTest::newRow("replicated") << GraphVerification::Replicas;
    QTest::newRow("freivalds") << GraphVerification::Freivalds;
}

void TestGraphDecisions::replicaArrivingAfterTheDecisionIsNotJudged() {
    QFETCH(GraphVerification, verification);
    GraphRig g(noAudits(), verification);
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& task = g.task(1);
    const int opinions = opinionsWanted(g.job());
    for (int i = 0; i < opinions; ++i)
        g.add(task, g.honest(1, "v-" + std::to_string(i)), "10.0.0." + std::to_string(i + 1));
    QVERIFY(g.waitDecided(1));
    const std::string stored = g.storedText(task.id);
    QVERIFY(!stored.empty());
    // A lie judged now would be rejected (and start the node's work); it is not judged at all.
    const std::int64_t late = g.add(task, g.lying(1, "v-late"), "10.0.0.9");
    QVERIFY(!task.judging);
    QVERIFY(!task.nodeComputing);
    QVERIFY(g.settle());
    QCOMPARE(g.recorded.decided[task.id], 1);
    QCOMPARE(g.verdictOf(task.id, late), std::string());
    QCOMPARE(g.countResults(ofTask(task)), std::int64_t{opinions});
    QCOMPARE(g.countResults(ofTask(task, "verdict = 'accepted'")), std::int64_t{opinions});
    QCOMPARE(stateOf(g, task), std::string("decided"));
    QCOMPARE(g.storedText(task.id), stored);
    QVERIFY(!g.trust.isQuarantined("v-late"));
    QVERIFY(g.recorded.jobFailures.empty());
}

void TestGraphDecisions::malformedReplicaIsRejectedAtOnceAndAnotherOpinionWanted_data() {
    QTest::addColumn<GraphVerification>("verification");
    QTest::newRow("replicated") << GraphVerification::Replicas;
    QTest::newRow("freivalds") << GraphVerification::Freivalds;
}

void TestGraphDecisions::malformedReplicaIsRejectedAtOnceAndAnotherOpinionWanted() {
    QFETCH(GraphVerification, verification);
    GraphRig g(noAudits(), verification);
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& task = g.task(0);
    const int opinions = opinionsWanted(g.job());
    const std::int64_t bad = leaseTo(g, task, "v-bad", "10.0.0.1");
    QVERIFY(bad > 0);
    const std::int64_t other = opinions == 2 ? leaseTo(g, task, "v-other", "10.0.0.2") : 0;
    QCOMPARE(other > 0, opinions == 2);
    QCOMPARE(stateOf(g, task), std::string("leased"));
    g.decisions.rejectMalformed(task, leaseOf(task, bad, "v-bad"), "cpu-reference", 0.25,
                                "2 outputs, 3 expected");
    // At once: no core handler and no worker ran since.
    QCOMPARE(g.verdictOf(task.id, bad), std::string("rejected shape-gate"));
    QCOMPARE(g.countResults(ofTask(task, "volunteer_id = 'v-bad' AND backend = 'cpu-reference' "
                                         "AND reason = '2 outputs, 3 expected' "
                                         "AND compute_seconds = 0.25")),
             std::int64_t{1});
    QCOMPARE(g.recorded.opinionsWanted[task.id], 1);
    QCOMPARE(stateOf(g, task), std::string("queued"));
    QVERIFY(task.replicas.empty());
    QVERIFY(!task.judging);
    QVERIFY(!task.nodeComputing);
    // Exactly one more opinion is wanted.
    const std::int64_t next = leaseTo(g, task, "v-next", "10.0.0.3");
    QVERIFY(next > 0);
    QCOMPARE(leaseTo(g, task, "v-extra", "10.0.0.4"), std::int64_t{0});
    QVERIFY(g.rig.node.waitUntil([&] { return g.recorded.quarantinesHandled == 1; }));
    // The other opinions decide the task; the malformed one counted for nothing.
    if (other > 0)
        arrive(g, task, g.honest(0, "v-other"), other, "10.0.0.2");
    QVERIFY(g.settle());
    QCOMPARE(g.recorded.decided[task.id], 0);
    arrive(g, task, g.honest(0, "v-next"), next, "10.0.0.3");
    QVERIFY(g.waitDecided(0));
    QCOMPARE(g.verdictOf(task.id, bad), std::string("rejected shape-gate"));
    QCOMPARE(g.countResults(ofTask(task, "verdict = 'accepted'")), std::int64_t{opinions});
    QCOMPARE(g.recorded.opinionsWanted[task.id], 1);
    QCOMPARE(g.recorded.decided[task.id], 1);
    QVERIFY(sameBits(g.storedOutputs(task.id), researcherOutputs(g.reference(0))));
    QVERIFY(g.recorded.jobFailures.empty());
}

void TestGraphDecisions::computeOnNodeDecidesWithTheNodesOutputs_data() {
    QTest::addColumn<GraphVerification>("verification");
    QTest::addColumn<bool>("lieIn");
    QTest::newRow("replicated, no replica in") << GraphVerification::Replicas << false;
    QTest::newRow("replicated, a lie in") << GraphVerification::Replicas << true;
    QTest::newRow("freivalds, no replica in") << GraphVerification::Freivalds << false;
}

void TestGraphDecisions::computeOnNodeDecidesWithTheNodesOutputs() {
    QFETCH(GraphVerification, verification);
    QFETCH(bool, lieIn);
    GraphRig g(noAudits(), verification);
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& task = g.task(1);
    const std::int64_t liar = lieIn ? g.add(task, g.lying(1, "v-liar")) : 0;
    g.decisions.computeOnNode(task);
    QVERIFY(task.nodeComputing);
    QVERIFY(g.waitDecided(1));
    QVERIFY(g.settle());
    QCOMPARE(stateOf(g, task), std::string("decided"));
    QVERIFY(task.nodeOutputs);
    QVERIFY(sameBits(task.outputs, researcherOutputs(g.reference(1))));
    QVERIFY(sameBits(g.storedOutputs(task.id), researcherOutputs(g.reference(1))));
    // The node's replica gets no verdict row; a volunteer's that differs from it is rejected.
    QCOMPARE(g.countResults(ofTask(task)), std::int64_t{lieIn ? 1 : 0});
    if (lieIn)
        QCOMPARE(g.verdictOf(task.id, liar), std::string("rejected node-compute"));
    QCOMPARE(g.recorded.decided[task.id], 1);
    QVERIFY(g.recorded.opinionsWanted.empty());
    QCOMPARE(g.recorded.rechecksDone, 0);
    QVERIFY(g.recorded.jobFailures.empty());
}

void TestGraphDecisions::quarantineDropsTheCaughtReplicaFromAnUndecidedTask() {
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& task = g.task(0);
    const std::int64_t one = leaseTo(g, task, "v-one", "10.0.0.1");
    const std::int64_t two = leaseTo(g, task, "v-two", "10.0.0.2");
    QVERIFY(one > 0 && two > 0);
    arrive(g, task, g.honest(0, "v-one"), one, "10.0.0.1");
    QCOMPARE(stateOf(g, task), std::string("leased"));
    g.trust.quarantine("v-one", "caught elsewhere");
    QVERIFY(g.rig.node.waitUntil([&] { return g.recorded.quarantinesHandled == 1; }));
    QCOMPARE(g.verdictOf(task.id, one), std::string("rejected quarantine"));
    QCOMPARE(g.countResults(ofTask(task, "reason = 'caught elsewhere'")), std::int64_t{1});
    QVERIFY(task.replicas.empty());
    QVERIFY(task.replicaPeers.empty());
    QCOMPARE(g.recorded.opinionsWanted[task.id], 1);
    QCOMPARE(stateOf(g, task), std::string("queued"));
    QCOMPARE(g.recorded.opinionsWanted[g.task(1).id], 0);
    // v-two's replica alone decides nothing: the dropped one does not count.
    arrive(g, task, g.honest(0, "v-two"), two, "10.0.0.2");
    QVERIFY(!task.judging);
    QVERIFY(g.settle());
    QCOMPARE(g.recorded.decided[task.id], 0);
    const std::int64_t three = leaseTo(g, task, "v-three", "10.0.0.3");
    QVERIFY(three > 0);
    arrive(g, task, g.honest(0, "v-three"), three, "10.0.0.3");
    QVERIFY(g.waitDecided(0));
    QCOMPARE(g.verdictOf(task.id, two), std::string("accepted replica-agreement"));
    QCOMPARE(g.verdictOf(task.id, three), std::string("accepted replica-agreement"));
    QCOMPARE(g.verdictOf(task.id, one), std::string("rejected quarantine"));
    QCOMPARE(g.countResults(ofTask(task)), std::int64_t{3});
    QVERIFY(g.recorded.jobFailures.empty());
}

void TestGraphDecisions::quarantineDuringTheNodesCheckLeavesTheDropToTheCheck() {
    GraphRig g(noAudits(), GraphVerification::Freivalds);
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& task = g.task(0);
    const std::int64_t caught = g.add(task, g.honest(0, "v-caught"), "10.0.0.1");
    QVERIFY(task.nodeComputing);
    // Called here, before the check can come back (the core thread has not run since).
    g.trust.quarantine("v-caught", "caught elsewhere");
    g.decisions.onQuarantined("v-caught");
    QCOMPARE(task.replicas.size(), std::size_t{1});
    QCOMPARE(g.verdictOf(task.id, caught), std::string());
    QCOMPARE(g.recorded.opinionsWanted[task.id], 0);
    // The check came back and dropped it: not decided on a caught volunteer's word.
    QVERIFY(g.rig.node.waitUntil([&] { return g.recorded.opinionsWanted[task.id] == 1; }));
    QVERIFY(g.rig.node.waitUntil([&] { return g.recorded.quarantinesHandled == 1; }));
    QVERIFY(g.settle());
    QCOMPARE(g.verdictOf(task.id, caught), std::string("rejected quarantine"));
    QCOMPARE(g.recorded.opinionsWanted[task.id], 1);
    QCOMPARE(g.recorded.decided[task.id], 0);
    QVERIFY(task.replicas.empty());
    QVERIFY(!g.book.settled(task));
    QVERIFY(g.storedText(task.id).empty());
    const std::int64_t honest = g.add(task, g.honest(0, "v-honest"), "10.0.0.2");
    QVERIFY(g.waitDecided(0));
    QCOMPARE(g.verdictOf(task.id, honest), std::string("accepted node-audit"));
    QCOMPARE(g.countResults(ofTask(task, "verdict = 'accepted'")), std::int64_t{1});
    QVERIFY(g.recorded.jobFailures.empty());
}

void TestGraphDecisions::quarantineRechecksDecidedTasksOfRunningJobsItTookPartIn_data() {
    QTest::addColumn<JobState>("jobState");
    QTest::newRow("running job") << JobState::Running;
    QTest::newRow("finished job") << JobState::Done;
}

void TestGraphDecisions::quarantineRechecksDecidedTasksOfRunningJobsItTookPartIn() {
    QFETCH(JobState, jobState);
    const bool running = jobState == JobState::Running;
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& joined = g.task(0);  // v-caught took part in it
    GraphTask& without = g.task(1); // it did not
    const std::int64_t one = g.add(joined, g.honest(0, "v-caught"), "10.0.0.1");
    const std::int64_t two = g.add(joined, g.honest(0, "v-two"), "10.0.0.2");
    g.add(without, g.honest(1, "v-three"), "10.0.0.3");
    g.add(without, g.honest(1, "v-four"), "10.0.0.4");
    QVERIFY(g.waitDecided(0));
    QVERIFY(g.waitDecided(1));
    g.job().state = jobState;
    g.trust.quarantine("v-caught", "caught elsewhere");
    // Just after the decisions' listener ran: a recheck marks its task before it goes to a worker.
    QVERIFY(stepUntil(g.rig.node, [&] { return g.recorded.quarantinesHandled == 1; }));
    QCOMPARE(joined.redeciding, running);
    QVERIFY(!without.redeciding);
    QCOMPARE(g.job().redeciding, std::int64_t{running ? 1 : 0});
    if (running)
        QVERIFY(g.rig.node.waitUntil([&] { return g.recorded.rechecksDone == 1; }));
    QVERIFY(g.settle());
    QCOMPARE(g.recorded.rechecksDone, running ? 1 : 0);
    QCOMPARE(g.job().redeciding, std::int64_t{0});
    // Honest replicas stand either way; a decided task's replicas are never dropped.
    QCOMPARE(g.verdictOf(joined.id, one), std::string("accepted replica-agreement"));
    QCOMPARE(g.verdictOf(joined.id, two), std::string("accepted replica-agreement"));
    QCOMPARE(joined.replicas.size(), std::size_t{2});
    QCOMPARE(g.countResults("method = 'quarantine'"), std::int64_t{0});
    QVERIFY(g.recorded.opinionsWanted.empty());
    QCOMPARE(g.recorded.decided[joined.id], 1);
    QVERIFY(g.recorded.jobFailures.empty());
}

QTEST_GUILESS_MAIN(TestGraphDecisions)
#include "test_graph_decisions.moc"
