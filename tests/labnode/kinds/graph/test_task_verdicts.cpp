// Tests of TaskVerdicts (task_verdicts.hpp) on the graph rig's book, verdict path, trust and peers,
// with hooks of the test's own: a decision writes one verdict per volunteer replica (none for the
// node's), the kept outputs and the task's state in one transaction, tells each volunteer once and
// trust once, and names its method by how the decisive replica was vouched for; a failing commit
// leaves nothing and the task can be decided again; a decision for a job that ended or was
// released meanwhile is dropped; a volunteer caught while the outputs are stored sends the task
// back to judging; a rejection is recorded and told (told even when it cannot be recorded); the
// replicas of quarantined volunteers are dropped from a task and as many opinions asked again.
#include <QtTest/QtTest>

#include <latch>

#include <boost/asio/post.hpp>

#include "goblin/net/messages/volunteer_messages.hpp"
#include "labnode/kinds/graph/graph_rig.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

// What TaskVerdicts asked of the graph kind, per task id.
struct Asked {
    std::map<std::int64_t, int> decided, rejudged, opinions;
    std::vector<std::string> jobFailures;
};

// The graph rig with a TaskVerdicts of the test's own (the rig's decisions stay idle: the test
// never involves a volunteer in a task, so their quarantine listener passes its tasks by) and
// volunteers connected through fake links.
class VerdictRig {
public:
    explicit VerdictRig(TrustSettings settings = noAudits()) : g(settings) {}

    std::uint64_t connect() {
        auto link = std::make_shared<FakePeerLink>();
        const std::uint64_t id = m_links.size() + 1;
        g.rig.peers.add(id, link, PeerRole::Volunteer);
        m_links[id] = link;
        return id;
    }
    // The verdicts a peer was told: "attempt verdict", in order.
    std::vector<std::string> told(std::uint64_t peer) const {
        std::vector<std::string> words;
        for (const net::Message& message : m_links.at(peer)->sentOfType("verdict")) {
            const auto verdict = net::parseTaskVerdict(message.control);
            words.push_back(!verdict ? std::string("malformed")
                                     : std::to_string(verdict->ref.attempt) + " " +
                                           std::string(net::wireName(verdict->verdict)));
        }
        return words;
    }
    void put(GraphTask& task, verify::Replica replica, std::int64_t attempt, std::uint64_t peer) {
        replica.attempt = attempt;
        task.replicas.push_back(std::move(replica));
        task.replicaPeers.push_back(peer);
    }
    verify::Replica node(std::size_t chunk) {
        verify::Replica replica = g.honest(chunk, "");
        replica.backend = "node-reference";
        return replica;
    }
    bool waitDecided(const GraphTask& task) {
        return g.rig.node.waitUntil([&] { return asked.decided[task.id] > 0; });
    }
    // Runs core until every worker job posted before has finished and what it posted to core ran:
    // both workers (the pool has two) are held at once, so the jobs queued before are done.
    bool drained() {
        bool back = false;
        auto both = std::make_shared<std::latch>(2);
        for (int i = 0; i < 2; ++i)
            boost::asio::post(g.rig.node.workers, [&, both, i] {
                both->arrive_and_wait();
                if (i == 0)
                    boost::asio::post(g.rig.node.core, [&] { back = true; });
            });
        return g.rig.node.waitUntil([&] { return back; });
    }
    std::int64_t auditsPassed(const std::string& volunteer) {
        const std::string sql = "SELECT coalesce(sum(audits_passed), 0) FROM volunteer_trust "
                                "WHERE volunteer_id = '" +
                                volunteer + "'";
        return queryInt(g.rig.node.store, sql);
    }
    std::string storedState(std::int64_t taskId) {
        auto query = g.rig.node.store.database().prepare(
            "SELECT state || ' ' || coalesce(outputs, 'null') FROM graph_tasks WHERE id = ?");
        query.bind(1, taskId);
        return query.step().value_or(false) ? query.columnText(0) : std::string();
    }
    bool execute(const std::string& sql) {
        return g.rig.node.store.database().execute(sql).has_value();
    }

    GraphRig g;
    Asked asked;

private:
    std::map<std::uint64_t, std::shared_ptr<FakePeerLink>> m_links;
    DecisionHooks m_hooks{
        [this](GraphTask& task) {
            ++asked.opinions[task.id];
            g.book.wantOpinion(task, "one more opinion wanted");
        },
        [this](GraphTask& task) { ++asked.decided[task.id]; },
        [this](GraphJob&, const Error& error) { asked.jobFailures.push_back(error.message); },
        [](GraphJob&) {},
        [this](GraphTask& task) { ++asked.rejudged[task.id]; },
        [](GraphTask&) {}};

public:
    TaskVerdicts verdicts{g.rig.context, g.book,  g.scheduler, g.path,
                          g.rig.peers,   g.trust, m_hooks};
};

// A judgement deciding by `decisive`: accepted replicas bit for bit, rejected ones by 4.5 bounds.
verify::Judgement judged(std::size_t decisive, const std::vector<bool>& accepted) {
    verify::Judgement judgement;
    judgement.decision = verify::Decision::Decided;
    judgement.decisive = decisive;
    for (const bool ok : accepted)
        judgement.verdicts.push_back({ok, ok ? 0.0 : 4.5, ok ? "equal" : "differs by 4.5 bounds"});
    return judgement;
}

std::string stateOf(GraphRig& g, const GraphTask& task) {
    return std::string(taskStateName(g.book.state(task)));
}

std::string ofTask(std::int64_t taskId, const std::string& more = {}) {
    return "task_id = " + std::to_string(taskId) + (more.empty() ? "" : " AND " + more);
}

using Told = std::vector<std::string>;

} // namespace

class TestTaskVerdicts : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void decisionCommitsOneVerdictPerVolunteerReplicaWithTheKeptOutputs();
    void methodSaysHowTheDecisiveReplicaWasVouchedFor_data();
    void methodSaysHowTheDecisiveReplicaWasVouchedFor();
    void failedCommitLeavesNothingAndTheTaskCanBeDecidedAgain();
    void decisionForAJobThatEndedMeanwhileIsDropped_data();
    void decisionForAJobThatEndedMeanwhileIsDropped();
    void volunteerCaughtWhileOutputsAreStoredSendsTheTaskBackToJudging();
    void rejectionIsRecordedTrustedAndToldOnce();
    void rejectionThatCannotBeRecordedIsStillToldToTheVolunteer();
    void quarantinedReplicasAreDroppedAndAsManyOpinionsAskedAgain();
};

void TestTaskVerdicts::decisionCommitsOneVerdictPerVolunteerReplicaWithTheKeptOutputs() {
    VerdictRig v;
    QVERIFY2(v.g.setupError().empty(), v.g.setupError().c_str());
    GraphTask& task = v.g.task(1);
    const std::uint64_t honestPeer = v.connect(), liarPeer = v.connect();
    v.put(task, v.g.honest(1, "v-honest"), 1, honestPeer);
    verify::Replica liar = v.g.lying(1, "v-liar");
    liar.backend = "opencl-graph";
    liar.computeSeconds = 0.5;
    v.put(task, std::move(liar), 2, liarPeer);
    v.put(task, v.node(1), 0, 0);
    task.tiebreak = true;
    v.verdicts.decide(task, judged(2, {true, false, true}), Vouched::ByReplicas);
    QCOMPARE(stateOf(v.g, task), std::string("deciding"));
    QVERIFY(v.waitDecided(task));
    QVERIFY(v.drained());
    // One row per volunteer replica, as judged; none for the node's own replica.
    QCOMPARE(v.g.countResults(ofTask(task.id)), std::int64_t{2});
    QCOMPARE(v.g.countResults(ofTask(task.id, "attempt = 1 AND volunteer_id = 'v-honest' AND "
                                              "verdict = 'accepted' AND method = 'node-tiebreak' "
                                              "AND backend = 'cpu-reference' AND reason = 'equal' "
                                              "AND disagreement_ratio = 0")),
             std::int64_t{1});
    QCOMPARE(v.g.countResults(ofTask(task.id, "attempt = 2 AND volunteer_id = 'v-liar' AND "
                                              "verdict = 'rejected' AND method = 'node-tiebreak' "
                                              "AND backend = 'opencl-graph' AND "
                                              "disagreement_ratio = 4.5 AND compute_seconds = 0.5 "
                                              "AND reason = 'differs by 4.5 bounds'")),
             std::int64_t{1});
    // The decisive replica's researcher output is stored and kept, the witness dropped everywhere.
    const std::vector<core::Tensor> kept = researcherOutputs(v.g.reference(1));
    QVERIFY(sameBits(v.g.storedOutputs(task.id), kept));
    QVERIFY(sameBits(task.outputs, kept));
    for (const verify::Replica& replica : task.replicas)
        QCOMPARE(replica.outputs.size(), std::size_t{1});
    QVERIFY(task.nodeOutputs);
    QCOMPARE(stateOf(v.g, task), std::string("decided"));
    // Each volunteer told once, trust once: one audit passed, the liar caught.
    QCOMPARE(v.told(honestPeer), Told{"1 accepted"});
    QCOMPARE(v.told(liarPeer), Told{"2 rejected"});
    QCOMPARE(v.auditsPassed("v-honest"), std::int64_t{1});
    QVERIFY(v.g.trust.isQuarantined("v-liar"));
    QVERIFY(!v.g.trust.isQuarantined("v-honest"));
    QCOMPARE(v.asked.decided[task.id], 1);
    QVERIFY(v.asked.jobFailures.empty());
}

void TestTaskVerdicts::methodSaysHowTheDecisiveReplicaWasVouchedFor_data() {
    QTest::addColumn<bool>("nodeDecisive");
    QTest::addColumn<bool>("cheapAudit");
    QTest::addColumn<bool>("audited");
    QTest::addColumn<bool>("tiebreak");
    QTest::addColumn<QString>("method");
    QTest::newRow("volunteers agree") << false << false << false << false << "replica-agreement";
    QTest::newRow("agreement cheaply audited") << false << true << false << false << "node-audit";
    QTest::newRow("node's full audit") << true << false << true << false << "node-audit";
    QTest::newRow("node's tie-break") << true << false << false << true << "node-tiebreak";
    QTest::newRow("node computed it") << true << false << false << false << "node-compute";
}

void TestTaskVerdicts::methodSaysHowTheDecisiveReplicaWasVouchedFor() {
    QFETCH(bool, nodeDecisive);
    QFETCH(bool, cheapAudit);
    QFETCH(bool, audited);
    QFETCH(bool, tiebreak);
    QFETCH(QString, method);
    VerdictRig v;
    QVERIFY2(v.g.setupError().empty(), v.g.setupError().c_str());
    GraphTask& task = v.g.task(0);
    v.put(task, v.g.honest(0, "v-one"), 1, v.connect());
    v.put(task, v.g.honest(0, "v-two"), 2, v.connect());
    if (nodeDecisive)
        v.put(task, v.node(0), 0, 0);
    task.audited = audited;
    task.tiebreak = tiebreak;
    v.verdicts.decide(task,
                      judged(nodeDecisive ? 2 : 1, std::vector<bool>(task.replicas.size(), true)),
                      cheapAudit ? Vouched::ByCheapAudit : Vouched::ByReplicas);
    QVERIFY(v.waitDecided(task));
    const std::string expected = "accepted " + method.toStdString();
    QCOMPARE(v.g.verdictOf(task.id, 1), expected);
    QCOMPARE(v.g.verdictOf(task.id, 2), expected);
    QCOMPARE(v.g.countResults(ofTask(task.id)), std::int64_t{2});
    QCOMPARE(task.nodeOutputs, nodeDecisive);
    QVERIFY(sameBits(v.g.storedOutputs(task.id), researcherOutputs(v.g.reference(0))));
    // Agreement is no history; every other method is the node's own check, credited once.
    const std::int64_t credit = method == "replica-agreement" ? 0 : 1;
    QCOMPARE(v.auditsPassed("v-one"), credit);
    QCOMPARE(v.auditsPassed("v-two"), credit);
}

void TestTaskVerdicts::failedCommitLeavesNothingAndTheTaskCanBeDecidedAgain() {
    VerdictRig v;
    QVERIFY2(v.g.setupError().empty(), v.g.setupError().c_str());
    GraphTask& task = v.g.task(0);
    const std::uint64_t onePeer = v.connect(), liarPeer = v.connect();
    v.put(task, v.g.honest(0, "v-one"), 1, onePeer);
    v.put(task, v.g.lying(0, "v-liar"), 2, liarPeer);
    // The task's row is written after the verdicts, in the same transaction: it fails.
    QVERIFY(v.execute("CREATE TRIGGER refuse_accept BEFORE UPDATE ON graph_tasks "
                      "BEGIN SELECT RAISE(ABORT, 'disk full (injected)'); END"));
    v.verdicts.decide(task, judged(0, {true, false}), Vouched::ByCheapAudit);
    QVERIFY(v.g.rig.node.waitUntil([&] { return !v.asked.jobFailures.empty(); }));
    QVERIFY(v.drained());
    QCOMPARE(v.asked.jobFailures.size(), std::size_t{1});
    QVERIFY(v.asked.jobFailures[0].find("disk full (injected)") != std::string::npos);
    QVERIFY(v.g.rig.node.logged("could not record its verdicts"));
    // Nothing written, nobody told, trust untouched, nothing decided in memory.
    QCOMPARE(v.g.countResults(ofTask(task.id)), std::int64_t{0});
    QCOMPARE(v.storedState(task.id), std::string("queued null"));
    QCOMPARE(v.told(onePeer), Told{});
    QCOMPARE(v.told(liarPeer), Told{});
    QVERIFY(!v.g.trust.isQuarantined("v-liar"));
    QCOMPARE(v.auditsPassed("v-one"), std::int64_t{0});
    QCOMPARE(v.asked.decided[task.id], 0);
    QVERIFY(!v.g.book.decided(task));
    QVERIFY(task.outputs.empty());
    QCOMPARE(task.replicas[0].outputs.size(), std::size_t{2}); // the witness still in memory
    // Once the database takes writes again, the same decision commits, each replica once.
    QVERIFY(v.execute("DROP TRIGGER refuse_accept"));
    v.verdicts.decide(task, judged(0, {true, false}), Vouched::ByCheapAudit);
    QVERIFY(v.waitDecided(task));
    QCOMPARE(v.g.verdictOf(task.id, 1), std::string("accepted node-audit"));
    QCOMPARE(v.g.verdictOf(task.id, 2), std::string("rejected node-audit"));
    QCOMPARE(v.g.countResults(ofTask(task.id)), std::int64_t{2});
    QVERIFY(sameBits(v.g.storedOutputs(task.id), researcherOutputs(v.g.reference(0))));
    QCOMPARE(stateOf(v.g, task), std::string("decided"));
    QCOMPARE(v.told(onePeer), Told{"1 accepted"});
    QCOMPARE(v.told(liarPeer), Told{"2 rejected"});
    QCOMPARE(v.auditsPassed("v-one"), std::int64_t{1});
    QVERIFY(v.g.trust.isQuarantined("v-liar"));
    QCOMPARE(v.asked.decided[task.id], 1);
    QCOMPARE(v.asked.jobFailures.size(), std::size_t{1});
}

void TestTaskVerdicts::decisionForAJobThatEndedMeanwhileIsDropped_data() {
    QTest::addColumn<bool>("released");
    QTest::newRow("job failed") << false;
    QTest::newRow("job released from the book") << true;
}

void TestTaskVerdicts::decisionForAJobThatEndedMeanwhileIsDropped() {
    QFETCH(bool, released);
    VerdictRig v;
    QVERIFY2(v.g.setupError().empty(), v.g.setupError().c_str());
    GraphTask& task = v.g.task(0);
    const std::int64_t taskId = task.id;
    const std::uint64_t onePeer = v.connect(), twoPeer = v.connect();
    v.put(task, v.g.honest(0, "v-one"), 1, onePeer);
    v.put(task, v.g.lying(0, "v-two"), 2, twoPeer);
    v.verdicts.decide(task, judged(0, {true, false}), Vouched::ByCheapAudit);
    // Before the outputs are stored (the core thread has not run since).
    if (released) {
        v.g.book.remove(v.g.jobId);
    } else {
        v.g.job().state = JobState::Failed;
        v.g.book.endJob(v.g.jobId, "the job failed");
    }
    QVERIFY(v.drained());
    QCOMPARE(v.g.countResults(ofTask(taskId)), std::int64_t{0});
    QCOMPARE(v.storedState(taskId), std::string("queued null"));
    QCOMPARE(v.told(onePeer), Told{});
    QCOMPARE(v.told(twoPeer), Told{});
    QVERIFY(!v.g.trust.isQuarantined("v-two"));
    QCOMPARE(v.auditsPassed("v-one"), std::int64_t{0});
    QCOMPARE(v.asked.decided[taskId], 0);
    QCOMPARE(v.asked.rejudged[taskId], 0);
    QVERIFY(v.asked.jobFailures.empty());
    if (!released) {
        QCOMPARE(stateOf(v.g, task), std::string("cancelled"));
        QVERIFY(task.outputs.empty());
    }
}

void TestTaskVerdicts::volunteerCaughtWhileOutputsAreStoredSendsTheTaskBackToJudging() {
    VerdictRig v;
    QVERIFY2(v.g.setupError().empty(), v.g.setupError().c_str());
    GraphTask& task = v.g.task(1);
    const std::uint64_t onePeer = v.connect(), caughtPeer = v.connect();
    v.put(task, v.g.honest(1, "v-one"), 1, onePeer);
    v.put(task, v.g.honest(1, "v-caught"), 2, caughtPeer);
    v.verdicts.decide(task, judged(1, {true, true}), Vouched::ByReplicas);
    // Caught elsewhere while its outputs are on a worker (the core thread has not run since).
    v.g.trust.quarantine("v-caught", "caught elsewhere");
    QVERIFY(v.g.rig.node.waitUntil([&] { return v.asked.rejudged[task.id] > 0; }));
    QVERIFY(v.drained());
    QCOMPARE(v.asked.rejudged[task.id], 1);
    QCOMPARE(v.asked.decided[task.id], 0);
    // The caught replica alone got a verdict; nothing was accepted or stored.
    QCOMPARE(v.g.verdictOf(task.id, 2), std::string("rejected quarantine"));
    QCOMPARE(v.g.countResults(ofTask(task.id, "reason = 'caught elsewhere'")), std::int64_t{1});
    QCOMPARE(v.g.countResults(ofTask(task.id)), std::int64_t{1});
    QCOMPARE(v.storedState(task.id), std::string("queued null"));
    QCOMPARE(task.replicas.size(), std::size_t{1});
    QCOMPARE(task.replicas[0].volunteerId, std::string("v-one"));
    QCOMPARE(task.replicaPeers, std::vector<std::uint64_t>{onePeer});
    QVERIFY(task.outputs.empty());
    // Called off, and queued for the one opinion lost.
    QCOMPARE(v.asked.opinions[task.id], 1);
    QCOMPARE(stateOf(v.g, task), std::string("queued"));
    QCOMPARE(v.told(onePeer), Told{});
    QCOMPARE(v.told(caughtPeer), Told{"2 rejected"});
    QVERIFY(v.asked.jobFailures.empty());
}

void TestTaskVerdicts::rejectionIsRecordedTrustedAndToldOnce() {
    VerdictRig v;
    QVERIFY2(v.g.setupError().empty(), v.g.setupError().c_str());
    GraphTask& task = v.g.task(0);
    const std::uint64_t peer = v.connect();
    verify::Replica bad = v.g.lazy(0, "v-bad");
    bad.attempt = 3;
    bad.computeSeconds = 0.25;
    v.verdicts.reject(task, bad, peer, "shape-gate", 0.5, "2 outputs, 3 expected");
    // At once: no core handler ran since.
    QCOMPARE(v.g.verdictOf(task.id, 3), std::string("rejected shape-gate"));
    QCOMPARE(v.g.countResults(ofTask(task.id, "volunteer_id = 'v-bad' AND backend = "
                                              "'cpu-reference' AND disagreement_ratio = 0.5 AND "
                                              "reason = '2 outputs, 3 expected' AND "
                                              "compute_seconds = 0.25")),
             std::int64_t{1});
    QCOMPARE(v.told(peer), Told{"3 rejected"});
    QVERIFY(v.g.trust.isQuarantined("v-bad"));
    QCOMPARE(v.g.trust.quarantineReason("v-bad"),
             "graph task " + std::to_string(task.id) +
                 " attempt 3 rejected (shape-gate): 2 outputs, 3 expected");
    QVERIFY(v.drained());
    QCOMPARE(v.told(peer), Told{"3 rejected"});
    // The task is not touched: no opinion asked, nothing decided or stored.
    QCOMPARE(stateOf(v.g, task), std::string("queued"));
    QVERIFY(v.asked.opinions.empty());
    QVERIFY(v.asked.decided.empty());
    QCOMPARE(v.storedState(task.id), std::string("queued null"));
}

void TestTaskVerdicts::rejectionThatCannotBeRecordedIsStillToldToTheVolunteer() {
    VerdictRig v;
    QVERIFY2(v.g.setupError().empty(), v.g.setupError().c_str());
    GraphTask& task = v.g.task(1);
    const std::uint64_t peer = v.connect();
    QVERIFY(v.execute("CREATE TRIGGER refuse_results BEFORE INSERT ON graph_results "
                      "BEGIN SELECT RAISE(ABORT, 'disk full (injected)'); END"));
    verify::Replica bad = v.g.lazy(1, "v-bad");
    bad.attempt = 4;
    v.verdicts.reject(task, bad, peer, "shape-gate", 1.0, "wrong dtype");
    QCOMPARE(v.g.countResults("1 = 1"), std::int64_t{0});
    QVERIFY(v.g.rig.node.logged("could not record a verdict"));
    QCOMPARE(v.told(peer), Told{"4 rejected"});
    // Trust hears only of committed verdicts.
    QVERIFY(!v.g.trust.isQuarantined("v-bad"));
}

void TestTaskVerdicts::quarantinedReplicasAreDroppedAndAsManyOpinionsAskedAgain() {
    VerdictRig v;
    QVERIFY2(v.g.setupError().empty(), v.g.setupError().c_str());
    GraphTask& task = v.g.task(0);
    const std::uint64_t caughtPeer = v.connect(), finePeer = v.connect(), alsoPeer = v.connect();
    v.put(task, v.node(0), 0, 0);
    v.put(task, v.g.honest(0, "v-caught"), 1, caughtPeer);
    v.put(task, v.g.honest(0, "v-fine"), 2, finePeer);
    v.put(task, v.g.honest(0, "v-also"), 3, alsoPeer);
    QVERIFY(!v.verdicts.restsOnQuarantined(task));
    QVERIFY(!v.verdicts.dropQuarantined(task)); // nobody caught yet
    QCOMPARE(v.g.countResults("1 = 1"), std::int64_t{0});
    v.g.trust.quarantine("v-caught", "caught on task 99");
    v.g.trust.quarantine("v-also", "caught on task 98");
    QVERIFY(v.drained()); // the quarantine listeners ran
    QVERIFY(v.verdicts.restsOnQuarantined(task));
    QVERIFY(v.verdicts.dropQuarantined(task));
    QCOMPARE(v.g.verdictOf(task.id, 1), std::string("rejected quarantine"));
    QCOMPARE(v.g.verdictOf(task.id, 3), std::string("rejected quarantine"));
    QCOMPARE(v.g.countResults(ofTask(task.id, "attempt = 1 AND reason = 'caught on task 99'")),
             std::int64_t{1});
    QCOMPARE(v.g.countResults(ofTask(task.id, "attempt = 3 AND reason = 'caught on task 98'")),
             std::int64_t{1});
    QCOMPARE(v.g.countResults(ofTask(task.id)), std::int64_t{2});
    // The node's replica and v-fine's stay, each with its own peer still.
    QCOMPARE(task.replicas.size(), std::size_t{2});
    QVERIFY(task.replicas[0].fromNode());
    QCOMPARE(task.replicas[1].volunteerId, std::string("v-fine"));
    QCOMPARE(task.replicaPeers, (std::vector<std::uint64_t>{0, finePeer}));
    QCOMPARE(v.asked.opinions[task.id], 2);
    QCOMPARE(v.told(caughtPeer), Told{"1 rejected"});
    QCOMPARE(v.told(alsoPeer), Told{"3 rejected"});
    QCOMPARE(v.told(finePeer), Told{});
    // A quarantine verdict does not quarantine again: the first reason stands.
    QCOMPARE(v.g.trust.quarantineReason("v-caught"), std::string("caught on task 99"));
    QVERIFY(!v.verdicts.restsOnQuarantined(task));
    QVERIFY(!v.verdicts.dropQuarantined(task));
    QCOMPARE(v.g.countResults("1 = 1"), std::int64_t{2});
    QCOMPARE(v.asked.opinions[task.id], 2);
}

QTEST_GUILESS_MAIN(TestTaskVerdicts)
#include "test_task_verdicts.moc"
