// Tests of the recheck after a quarantine (quarantine_recheck.hpp) through GraphDecisions on a
// real GraphBook: when a volunteer of a task decided by two agreeing replicas is quarantined, the
// node recomputes the task; right replicas stand, agreeing liars are overturned in graph_results,
// the task's outputs become the node's (the lie's blobs are deleted) and the partner is quarantined
// in turn; a task the node checked alone (verification="freivalds") is not rechecked; a merge of
// the job already running when a recheck begins is called off, to be taken again after it.
#include <QtTest/QtTest>

#include "kinds/graph/graph_blobs.hpp"
#include "labnode/kinds/graph/graph_rig.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

// The task of chunk 0 decided by agreement of v-one's and v-two's replicas (audits are off, so
// agreeing liars get through). Their attempts.
std::pair<std::int64_t, std::int64_t> decideByAgreement(GraphRig& g, bool lie) {
    GraphTask& task = g.task(0);
    auto replica = [&](const std::string& who) { return lie ? g.lying(0, who) : g.honest(0, who); };
    const std::int64_t one = g.add(task, replica("v-one"), "10.0.0.1");
    const std::int64_t two = g.add(task, replica("v-two"), "10.0.0.2");
    if (!g.waitDecided(0))
        return {0, 0};
    return {one, two};
}

} // namespace

class TestQuarantineRecheck : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void rightReplicasStand();
    void agreeingLiarsAreOverturnedAndTheirOutputsReplaced();
    void taskCheckedAloneIsNotRechecked();
    void aMergeRunningWhenARecheckBeginsIsCalledOff();
};

void TestQuarantineRecheck::rightReplicasStand() {
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    const auto [one, two] = decideByAgreement(g, false);
    QVERIFY(one > 0);
    GraphTask& task = g.task(0);
    const std::string before = g.storedText(task.id);
    QVERIFY(!before.empty());
    g.trust.quarantine("v-one", "caught elsewhere");
    QVERIFY(g.rig.node.waitUntil([&] { return g.recorded.rechecksDone == 1; }));
    QVERIFY(g.rig.node.logged("rechecked by the node: its outputs stand"));
    QCOMPARE(g.verdictOf(task.id, one), std::string("accepted replica-agreement"));
    QCOMPARE(g.verdictOf(task.id, two), std::string("accepted replica-agreement"));
    QCOMPARE(g.countResults("method = 'node-recheck'"), std::int64_t{0});
    QCOMPARE(g.storedText(task.id), before);
    QVERIFY(!task.nodeOutputs);
    QVERIFY(!task.redeciding);
    QCOMPARE(g.job().redeciding, std::int64_t{0});
    QVERIFY(!g.trust.isQuarantined("v-two"));
    QCOMPARE(g.recorded.decided[task.id], 1);
    QVERIFY(g.recorded.jobFailures.empty());
}

void TestQuarantineRecheck::agreeingLiarsAreOverturnedAndTheirOutputsReplaced() {
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    const auto [one, two] = decideByAgreement(g, true);
    QVERIFY(one > 0);
    GraphTask& task = g.task(0);
    // The pair's lie got through, for now.
    QCOMPARE(g.verdictOf(task.id, one), std::string("accepted replica-agreement"));
    QCOMPARE(g.verdictOf(task.id, two), std::string("accepted replica-agreement"));
    QVERIFY(sameBits(g.storedOutputs(task.id), researcherOutputs(g.lying(0, "v-one").outputs)));
    const std::vector<std::string> lies = storedDigests(g.storedText(task.id));
    QVERIFY(!lies.empty() && g.rig.node.blobs.has(lies.front()));
    g.trust.quarantine("v-one", "caught elsewhere");
    QVERIFY(g.rig.node.waitUntil([&] { return g.recorded.rechecksDone == 1; }));
    QCOMPARE(g.verdictOf(task.id, one), std::string("rejected node-recheck"));
    QCOMPARE(g.verdictOf(task.id, two), std::string("rejected node-recheck"));
    QCOMPARE(g.countResults("verdict = 'accepted'"), std::int64_t{0});
    QVERIFY(task.nodeOutputs);
    QVERIFY(sameBits(task.outputs, researcherOutputs(g.reference(0))));
    QVERIFY(sameBits(g.storedOutputs(task.id), researcherOutputs(g.reference(0))));
    for (const std::string& digest : lies) // the lie's blobs, used nowhere now, are gone
        QVERIFY(!g.rig.node.blobs.has(digest));
    // The partner is quarantined in turn; the node's outputs need no second recheck.
    QVERIFY(g.trust.isQuarantined("v-two"));
    QVERIFY(g.rig.node.waitUntil([&] { return g.recorded.quarantinesHandled == 2; }));
    QVERIFY(g.settle());
    QCOMPARE(g.recorded.rechecksDone, 1);
    QCOMPARE(g.job().redeciding, std::int64_t{0});
    QCOMPARE(g.recorded.decided[task.id], 1);
    QVERIFY(g.recorded.jobFailures.empty());
}

void TestQuarantineRecheck::taskCheckedAloneIsNotRechecked() {
    GraphRig g(noAudits(), GraphVerification::Freivalds);
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    GraphTask& task = g.task(0);
    const std::int64_t attempt = g.add(task, g.honest(0, "v-one"));
    QVERIFY(g.waitDecided(0));
    const std::string before = g.storedText(task.id);
    g.trust.quarantine("v-one", "caught elsewhere");
    QVERIFY(g.rig.node.waitUntil([&] { return g.recorded.quarantinesHandled == 1; }));
    QVERIFY(!task.redeciding); // a recheck would have begun in the listener
    QCOMPARE(g.job().redeciding, std::int64_t{0});
    QVERIFY(g.settle());
    QCOMPARE(g.recorded.rechecksDone, 0);
    QCOMPARE(g.verdictOf(task.id, attempt), std::string("accepted node-audit"));
    QCOMPARE(g.storedText(task.id), before);
    QVERIFY(g.recorded.jobFailures.empty());
}

void TestQuarantineRecheck::aMergeRunningWhenARecheckBeginsIsCalledOff() {
    GraphRig g(noAudits());
    QVERIFY2(g.setupError().empty(), g.setupError().c_str());
    QVERIFY(decideByAgreement(g, true).first > 0);
    GraphTask& other = g.task(1);
    g.add(other, g.honest(1, "v-three"), "10.0.0.3");
    g.add(other, g.honest(1, "v-four"), "10.0.0.4");
    QVERIFY(g.waitDecided(1));
    // Every task is decided: the node takes the job's merge (as GraphJobs::finishJob does).
    QVERIFY(g.book.takeMerge(g.job(), "every task is decided: the node merges their outputs"));
    QVERIFY(g.book.merging(g.job()));
    g.trust.quarantine("v-one", "caught elsewhere");
    // The recheck begins in the listener: the merge in flight no longer counts.
    QVERIFY(g.rig.node.waitUntil([&] { return !g.book.merging(g.job()); }));
    const Task* merge = g.book.mergeTaskOf(g.job());
    QVERIFY(merge);
    QCOMPARE(merge->state, TaskState::Queued);
    QCOMPARE(merge->story.back().cause, "task " + std::to_string(g.task(0).id) + " is rechecked");
    QVERIFY(g.rig.node.waitUntil([&] { return g.recorded.rechecksDone == 1; }));
    QVERIFY(g.task(0).nodeOutputs); // the lie was replaced
    // Once the recheck ended, the merge is taken again, from the node's outputs.
    QVERIFY(g.book.takeMerge(g.job(), "the recheck ended"));
    QVERIFY(g.settle());
    QVERIFY(g.recorded.jobFailures.empty());
}

QTEST_GUILESS_MAIN(TestQuarantineRecheck)
#include "test_quarantine_recheck.moc"
