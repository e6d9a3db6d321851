// Tests of the replica decider (replica_decider.hpp) through GraphDecisions on a real GraphBook:
// two equal replicas decide by agreement; a liar against an honest volunteer is decided by the
// node's tie-break; two agreeing liars are caught when trust has the node audit them; a replica
// that arrives while a pair is judged is judged with them, and the task is decided once.
#include <QtTest/QtTest>

#include "labnode/kinds/graph/graph_rig.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

class TestReplicaDecider : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void equalReplicasDecideByAgreement();
    void liarLosesTheNodesTiebreak();
    void agreeingLiarsAreCaughtByAnAudit();
    void replicaArrivingDuringJudgingIsJudgedWithThePair();
};

void TestReplicaDecider::equalReplicasDecideByAgreement() {
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& task = g.task(0);
    const std::int64_t one = g.add(task, g.honest(0, "v-one"), "10.0.0.1");
    QCOMPARE(g.recorded.decided[task.id], 0); // one opinion decides nothing
    const std::int64_t two = g.add(task, g.honest(0, "v-two"), "10.0.0.2");
    QVERIFY(g.waitDecided(0));
    QCOMPARE(g.verdictOf(task.id, one), std::string("accepted replica-agreement"));
    QCOMPARE(g.verdictOf(task.id, two), std::string("accepted replica-agreement"));
    QCOMPARE(g.countResults("task_id = " + std::to_string(task.id)), std::int64_t{2});
    QVERIFY(g.book.decided(task));
    QVERIFY(!task.nodeOutputs);
    // Only the researcher's output is kept (the relu), never the matmul's witness: a later
    // recheck compares what the researcher got.
    QVERIFY(sameBits(task.outputs, researcherOutputs(g.reference(0))));
    QVERIFY(sameBits(g.storedOutputs(task.id), researcherOutputs(g.reference(0))));
    QCOMPARE(task.outputs.size(), std::size_t{1});
    QVERIFY(g.recorded.opinionsWanted.empty());
    QVERIFY(g.recorded.jobFailures.empty());
    QCOMPARE(g.recorded.decided[g.task(1).id], 0);
}

void TestReplicaDecider::liarLosesTheNodesTiebreak() {
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& task = g.task(1);
    const std::int64_t liar = g.add(task, g.lying(1, "v-liar"), "10.0.0.1");
    const std::int64_t honest = g.add(task, g.honest(1, "v-honest"), "10.0.0.2");
    QVERIFY(g.waitDecided(1));
    QVERIFY(g.rig.node.logged("the volunteers disagree; the node decides"));
    QCOMPARE(g.verdictOf(task.id, liar), std::string("rejected node-tiebreak"));
    QCOMPARE(g.verdictOf(task.id, honest), std::string("accepted node-tiebreak"));
    QVERIFY(task.nodeOutputs);
    QVERIFY(sameBits(task.outputs, researcherOutputs(g.reference(1))));
    QVERIFY(sameBits(g.storedOutputs(task.id), researcherOutputs(g.reference(1))));
    // The rejection quarantines the liar, not the honest volunteer.
    QVERIFY(g.rig.node.waitUntil([&] { return g.recorded.quarantinesHandled == 1; }));
    QVERIFY(g.trust.isQuarantined("v-liar"));
    QVERIFY(!g.trust.isQuarantined("v-honest"));
    QCOMPARE(g.recorded.decided[task.id], 1);
    QCOMPARE(g.recorded.rechecksDone, 0); // the node's own outputs need no recheck
    QVERIFY(g.recorded.jobFailures.empty());
}

void TestReplicaDecider::agreeingLiarsAreCaughtByAnAudit() {
    GraphRig g(alwaysAudited());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& task = g.task(0);
    const std::int64_t one = g.add(task, g.lying(0, "v-one"), "10.0.0.1");
    const std::int64_t two = g.add(task, g.lying(0, "v-two"), "10.0.0.2");
    QVERIFY(g.waitDecided(0));
    // The cheap audit recomputes the relu from the honest witness and finds it differs; the node
    // recomputes the task and both lose against it.
    QVERIFY(g.rig.node.logged("the cheap audit failed"));
    QCOMPARE(g.verdictOf(task.id, one), std::string("rejected node-audit"));
    QCOMPARE(g.verdictOf(task.id, two), std::string("rejected node-audit"));
    QCOMPARE(g.countResults("verdict = 'accepted'"), std::int64_t{0});
    QVERIFY(task.audited);
    QVERIFY(task.nodeOutputs);
    QVERIFY(sameBits(task.outputs, researcherOutputs(g.reference(0))));
    QVERIFY(sameBits(g.storedOutputs(task.id), researcherOutputs(g.reference(0))));
    QVERIFY(g.trust.isQuarantined("v-one"));
    QVERIFY(g.trust.isQuarantined("v-two"));
    QCOMPARE(queryInt(g.rig.node.store,
                      "SELECT count(*) FROM volunteer_trust WHERE quarantined_at IS NOT NULL"),
             std::int64_t{2});
    QVERIFY(g.recorded.jobFailures.empty());
}

void TestReplicaDecider::replicaArrivingDuringJudgingIsJudgedWithThePair() {
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& task = g.task(0);
    const std::int64_t one = g.add(task, g.honest(0, "v-one"), "10.0.0.1");
    const std::int64_t two = g.add(task, g.honest(0, "v-two"), "10.0.0.2");
    QVERIFY(task.judging); // the pair's comparison is on a worker; core has not run since
    const std::int64_t late = g.add(task, g.honest(0, "v-late"), "10.0.0.3");
    QVERIFY(g.waitDecided(0));
    QVERIFY(g.settle()); // anything a second decision would have posted has run
    QCOMPARE(g.recorded.decided[task.id], 1);
    for (const std::int64_t attempt : {one, two, late})
        QCOMPARE(g.verdictOf(task.id, attempt), std::string("accepted replica-agreement"));
    QCOMPARE(g.countResults("task_id = " + std::to_string(task.id)), std::int64_t{3});
    QCOMPARE(task.replicas.size(), std::size_t{3});
    QVERIFY(sameBits(g.storedOutputs(task.id), researcherOutputs(g.reference(0))));
    QVERIFY(g.recorded.jobFailures.empty());
}

QTEST_GUILESS_MAIN(TestReplicaDecider)
#include "test_replica_decider.moc"
