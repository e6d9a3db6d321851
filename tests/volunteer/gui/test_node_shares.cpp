// Several lab nodes: addresses are checked before use, shares split the lent time (the per-node
// duties never add up to more than the limit), and the nodes' statuses sum into one.
#include <QtTest>

#include "node_shares.hpp"
#include "volunteer_state.hpp"

using namespace goblin::volunteer;

class TestNodeShares : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void badAddressesAreExplained();
    void sharesSplitTheTime();
    void dutySplitNeverExceedsTheLimit();
    void statusesAreSummed();
    void connectionTexts();
};

void TestNodeShares::badAddressesAreExplained() {
    QVERIFY(!nodeUrlProblem(QStringLiteral("ws://127.0.0.1:8765")));
    QVERIFY(!nodeUrlProblem(QStringLiteral("  ws://lab.example.org:9000  ")));
    QVERIFY(nodeUrlProblem(QString())->contains(QLatin1String("Type the lab node's address")));
    for (const QString& bad : {QStringLiteral("lab.example.org"), QStringLiteral("http://x:1"),
                               QStringLiteral("ws://"), QStringLiteral("ws://host:notaport")}) {
        const auto problem = nodeUrlProblem(bad);
        QVERIFY2(problem, qPrintable(bad));
        QVERIFY2(problem->startsWith(QLatin1String("Not a lab node address: node URL '")),
                 qPrintable(*problem));
    }
}

void TestNodeShares::sharesSplitTheTime() {
    QCOMPARE(sharePercents({}), std::vector<int>{});
    QCOMPARE(sharePercents({{QStringLiteral("a"), 1}}), std::vector<int>{100});
    QCOMPARE(sharePercents({{QStringLiteral("a"), 3}, {QStringLiteral("b"), 1}}),
             (std::vector<int>{75, 25}));
    QCOMPARE(sharePercents(
                 {{QStringLiteral("a"), 1}, {QStringLiteral("b"), 1}, {QStringLiteral("c"), 1}}),
             (std::vector<int>{33, 33, 33}));
    // A corrupt weight is clamped, and a tiny share still gets a slice.
    QCOMPARE(sharePercents({{QStringLiteral("a"), 100}, {QStringLiteral("b"), -5}}),
             (std::vector<int>{99, 1}));
    QCOMPARE(sharePercents({{QStringLiteral("a"), 1000}, {QStringLiteral("b"), 100}}),
             (std::vector<int>{50, 50}));
}

void TestNodeShares::dutySplitNeverExceedsTheLimit() {
    const ComputePlan whole{true, false, 3, 60};
    const ComputePlan a = planForShare(whole, 75), b = planForShare(whole, 25);
    QCOMPARE(a.dutyPercent, 45);
    QCOMPARE(b.dutyPercent, 15);
    QCOMPARE(a.threads, 3); // every engine on the same threads: the BLAS count is process-wide
    QCOMPARE(b.threads, 3);
    QVERIFY(a.run && b.run);
    QCOMPARE(planForShare(ComputePlan{true, true, 1, 1}, 10).dutyPercent, 1);
    QVERIFY(planForShare(ComputePlan{true, true, 1, 1}, 10).holdNewTasks);
    QCOMPARE(planForShare(ComputePlan{false, false, 0, 100}, 100),
             (ComputePlan{false, false, 0, 100}));
}

void TestNodeShares::statusesAreSummed() {
    QCOMPARE(combinedStatus({}).link, LinkState::Stopped);
    NodeStatus a{QStringLiteral("ws://a:1"), 75, {}};
    a.engine.link = LinkState::Disconnected;
    a.engine.lastError = "cannot reach the lab node: refused";
    a.engine.counters.computed = 3;
    a.engine.counters.accepted = 2;
    a.engine.counters.computeSeconds = 1.5;
    NodeStatus b{QStringLiteral("ws://b:1"), 25, {}};
    b.engine.link = LinkState::Connected;
    b.engine.backend = "cpu-eigen";
    b.engine.counters.computed = 4;
    b.engine.counters.rejected = 1;
    b.engine.counters.computeSeconds = 2;
    b.engine.tasksOpen = 2;
    b.engine.running = TaskProgress{9, 0.5};
    b.engine.parked = true;
    const EngineStatus all = combinedStatus({a, b});
    QCOMPARE(all.link, LinkState::Connected);
    QCOMPARE(all.counters.computed, 7);
    QCOMPARE(all.counters.accepted, 2);
    QCOMPARE(all.counters.rejected, 1);
    QCOMPARE(all.counters.computeSeconds, 3.5);
    QCOMPARE(all.tasksOpen, 2);
    QCOMPARE(all.running->task, 9);
    QVERIFY(all.parked);
    QCOMPARE(all.backend, std::string("cpu-eigen"));
    QCOMPARE(all.lastError, a.engine.lastError);
    // Parked only when every node with a task is.
    a.engine.running = TaskProgress{1, 0.1};
    QVERIFY(!combinedStatus({a, b}).parked);
    a.engine.link = LinkState::Refused;
    b.engine.link = LinkState::Refused;
    QCOMPARE(combinedStatus({a, b}).link, LinkState::Refused);
    b.engine.link = LinkState::Connecting;
    QCOMPARE(combinedStatus({a, b}).link, LinkState::Connecting);
}

void TestNodeShares::connectionTexts() {
    EngineStatus status;
    status.link = LinkState::Disconnected;
    status.lastError = "cannot reach the lab node: Connection refused";
    status.retryDelay = std::chrono::milliseconds(4000);
    QCOMPARE(nodeLinkText(status),
             QStringLiteral("retrying in 4.0 s (back-off) after: cannot reach the lab node: "
                            "Connection refused"));
    status.link = LinkState::Refused;
    status.lastError = "the lab node refused this volunteer: version_mismatch: this node speaks "
                       "protocol 1 with catalog 1";
    QVERIFY(nodeLinkText(status).startsWith(
        QStringLiteral("refused: the lab node speaks another protocol version (this node speaks "
                       "protocol 1 with catalog 1)")));
    QVERIFY(nodeLinkText(status).endsWith(QStringLiteral("not retrying.")));
    status.link = LinkState::Connected;
    QCOMPARE(nodeLinkText(status), QStringLiteral("connected"));
}

QTEST_APPLESS_MAIN(TestNodeShares)
#include "test_node_shares.moc"
