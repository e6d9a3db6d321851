// Tests of the decider of graph tasks checked by Freivalds (checked_alone_decider.hpp) through
// GraphDecisions on a real GraphBook of a verification="freivalds" job: one honest replica is
// decided by the node's check and only the researcher's outputs are kept; a lying or lazy replica
// is rejected, another opinion is asked and the task waits for it; an honest second replica then
// decides it.
#include <QtTest/QtTest>

#include "labnode/kinds/graph/graph_rig.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

enum class Lie { Nudged, Lazy };

} // namespace

Q_DECLARE_METATYPE(Lie)

class TestCheckedAloneDecider : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void honestReplicaIsDecidedByTheNodesCheck();
    void failedCheckRejectsAndAsksAnotherOpinion_data();
    void failedCheckRejectsAndAsksAnotherOpinion();
};

void TestCheckedAloneDecider::honestReplicaIsDecidedByTheNodesCheck() {
    // Trust that would audit nothing: a checked-alone task is checked whatever trust says.
    GraphRig g(noAudits(), GraphVerification::Freivalds);
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    QCOMPARE(opinionsWanted(g.job()), 1);
    GraphTask& task = g.task(0);
    const std::int64_t attempt = g.add(task, g.honest(0, "v-one"));
    QVERIFY(g.waitDecided(0));
    const std::string verdict = g.verdictOf(task.id, attempt);
    QCOMPARE(verdict, std::string("accepted node-audit"));
    QCOMPARE(g.countResults("reason LIKE 'cheap audit:%checked by Freivalds%'"), std::int64_t{1});
    // The researcher's output alone, not the matmul's witness.
    const std::vector<core::Tensor> reference = g.reference(0);
    QCOMPARE(reference.size(), std::size_t{2});
    const std::vector<core::Tensor> researchers{reference[0]};
    QVERIFY(sameBits(task.outputs, researchers));
    QVERIFY(sameBits(g.storedOutputs(task.id), researchers));
    QVERIFY(!task.nodeOutputs);
    QVERIFY(g.recorded.opinionsWanted.empty());
    QVERIFY(g.recorded.jobFailures.empty());
    // Credited like any node audit.
    QCOMPARE(queryInt(g.rig.node.store,
                      "SELECT audits_passed FROM volunteer_trust WHERE volunteer_id = 'v-one'"),
             std::int64_t{1});
}

void TestCheckedAloneDecider::failedCheckRejectsAndAsksAnotherOpinion_data() {
    QTest::addColumn<Lie>("lie");
    QTest::newRow("one element one ulp off") << Lie::Nudged;
    QTest::newRow("lazy zeros") << Lie::Lazy;
}

void TestCheckedAloneDecider::failedCheckRejectsAndAsksAnotherOpinion() {
    QFETCH(Lie, lie);
    GraphRig g(noAudits(), GraphVerification::Freivalds);
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& task = g.task(1);
    const std::int64_t liar =
        g.add(task, lie == Lie::Nudged ? g.lying(1, "v-liar") : g.lazy(1, "v-liar"));
    QVERIFY(g.rig.node.waitUntil([&] { return g.recorded.opinionsWanted[task.id] > 0; }));
    QVERIFY(g.rig.node.waitUntil([&] { return g.recorded.quarantinesHandled == 1; }));
    QVERIFY(g.settle());
    QCOMPARE(g.recorded.opinionsWanted[task.id], 1);
    QCOMPARE(g.verdictOf(task.id, liar), std::string("rejected node-audit"));
    QCOMPARE(g.countResults("reason LIKE 'the node''s check failed%'"), std::int64_t{1});
    QCOMPARE(g.recorded.decided[task.id], 0);
    QVERIFY(!g.book.settled(task));
    QVERIFY(task.replicas.empty());
    QVERIFY(g.storedText(task.id).empty());
    QVERIFY(g.trust.isQuarantined("v-liar"));
    // Another volunteer's honest replica decides it.
    const std::int64_t honest = g.add(task, g.honest(1, "v-honest"), "10.0.0.2");
    QVERIFY(g.waitDecided(1));
    QCOMPARE(g.verdictOf(task.id, honest), std::string("accepted node-audit"));
    QCOMPARE(g.verdictOf(task.id, liar), std::string("rejected node-audit"));
    const std::vector<core::Tensor> researchers{g.reference(1)[0]};
    QVERIFY(sameBits(g.storedOutputs(task.id), researchers));
    QCOMPARE(g.recorded.decided[task.id], 1);
    QCOMPARE(g.recorded.opinionsWanted[task.id], 1);
    QVERIFY(g.recorded.jobFailures.empty());
}

QTEST_GUILESS_MAIN(TestCheckedAloneDecider)
#include "test_checked_alone_decider.moc"
