// The engine bridge with a real engine against a real `goblin-labnode serve` on loopback: it
// connects, computes a real tile (submitted by the Python client), and a pause holds within a
// second — the task's progress stops until the resume, after which the tile is verified.
#include <QtTest>

#include "engine_bridge.hpp"
#include "lab_node_fixture.hpp"

using namespace goblin::volunteer;

class TestEngineBridge : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void pauseHoldsAtTheNextSlice();
    void longPauseHandsTasksBack();
    void pauseHoldsTinyTiles();
    void badUrlIsReported();
    void twoNodesEachGetTheirShare();
    void refusedVersionIsNotRetried();

private:
    // Every status the bridge reports lands in `status`; it polls every 50 ms.
    void watch(EngineBridge& bridge, EngineStatus& status);
    // One connection to the fixture's node (weight 100), the identity kept in the fixture's
    // folder `identity`, 1 slot, 256 MiB lent.
    BridgeConfig nodeConfig(const QString& identity) const;

    goblin::testing::LabNodeFixture m_node;
};

void TestEngineBridge::watch(EngineBridge& bridge, EngineStatus& status) {
    bridge.setPollInterval(50);
    connect(&bridge, &EngineBridge::statusChanged, this,
            [&status](const EngineStatus& next) { status = next; });
}

BridgeConfig TestEngineBridge::nodeConfig(const QString& identity) const {
    return BridgeConfig{{{m_node.url(), 100}}, m_node.path(identity), 1, 256 << 20};
}

void TestEngineBridge::initTestCase() {
    if (const QString why = m_node.start(); !why.isEmpty())
        QSKIP(qPrintable(why));
    if (!goblin::testing::LabNodeFixture::havePython())
        QSKIP("no .venv with the Python client (scripts/python_env.sh makes it)");
}

void TestEngineBridge::pauseHoldsAtTheNextSlice() {
    EngineBridge bridge;
    EngineStatus status;
    watch(bridge, status);
    // 10 % CPU time: the tile takes seconds of wall time, in slices of about 50 ms.
    bridge.setPlan(ComputePlan{true, false, 1, 10});
    bridge.start(nodeConfig(QStringLiteral("volunteer")));
    QTRY_COMPARE_WITH_TIMEOUT(status.link, LinkState::Connected, 20000);

    QProcess researcher;
    m_node.submit(researcher, 2048, 2048); // one 2048×1024 f64 tile: ~4 GFLOP
    QVERIFY(researcher.waitForStarted(10000));

    QTRY_VERIFY_WITH_TIMEOUT(status.running && status.running->fraction > 0, 60000);
    bridge.setPlan(ComputePlan{false, false, 1, 10});
    // The pause holds at the next slice (about 50 ms); the wait is generous so that a busy
    // machine does not fail it (tests never assert how long something took).
    QTRY_VERIFY_WITH_TIMEOUT(status.parked, 20000);
    const double atPause = status.running ? status.running->fraction : -1;
    QVERIFY(atPause > 0 && atPause < 1);
    QTest::qWait(1500);
    QVERIFY(status.parked);
    QCOMPARE(status.running ? status.running->fraction : -1, atPause);
    QCOMPARE(status.counters.computed, 0);

    bridge.setPlan(ComputePlan{true, false, 0, 100});
    QTRY_VERIFY_WITH_TIMEOUT(status.counters.accepted == 1, 60000);
    QVERIFY(researcher.waitForFinished(60000));
    QVERIFY2(researcher.exitCode() == 0, researcher.readAllStandardError().constData());
    QVERIFY(researcher.readAllStandardOutput().startsWith("ok"));
    // The result leaves the compute thread before the engine counts it: the verdict can come
    // first on a busy machine, so the count is waited for.
    QTRY_COMPARE_WITH_TIMEOUT(status.counters.computed, 1, 20000);
    QTRY_VERIFY_WITH_TIMEOUT(status.counters.computeSeconds > 0, 20000);
    bridge.stop();
}

// Paused past releaseAfterPause while holding a task, the engine hangs up (the node re-queues the
// task); on resume it reconnects, gets the task again and the job completes.
void TestEngineBridge::longPauseHandsTasksBack() {
    EngineBridge bridge;
    EngineStatus status;
    watch(bridge, status);
    bridge.setPlan(ComputePlan{false, false, 1, 100});
    BridgeConfig config = nodeConfig(QStringLiteral("volunteer2"));
    config.releaseAfterPauseMs = 1500;
    bridge.start(config);
    QTRY_COMPARE_WITH_TIMEOUT(status.link, LinkState::Connected, 20000);

    QProcess researcher;
    m_node.submit(researcher, 2048, 2048); // one 2048×1024 f64 tile: ~4 GFLOP
    QVERIFY(researcher.waitForStarted(10000));
    // The plan was "paused" before the task came: it waits at the gate, then is handed back.
    QTRY_VERIFY_WITH_TIMEOUT(status.tasksOpen == 1 || status.link == LinkState::Released, 60000);
    QTRY_COMPARE_WITH_TIMEOUT(status.link, LinkState::Released, 10000);
    QTRY_COMPARE_WITH_TIMEOUT(status.tasksOpen, 0, 5000); // the held task was dropped
    QCOMPARE(status.counters.computed, 0);

    bridge.setPlan(ComputePlan{true, false, 0, 100});
    QTRY_VERIFY_WITH_TIMEOUT(status.counters.accepted == 1, 60000);
    QVERIFY(researcher.waitForFinished(60000));
    QVERIFY2(researcher.exitCode() == 0, researcher.readAllStandardError().constData());
    bridge.stop();
}

// Tiny tiles are computed on the engine's io thread only at full duty with nothing paused or
// held: a paused volunteer holds them at the gate like any task, and computes them all on resume.
void TestEngineBridge::pauseHoldsTinyTiles() {
    EngineBridge bridge;
    EngineStatus status;
    watch(bridge, status);
    bridge.setPlan(ComputePlan{false, false, 1, 100});
    bridge.start(nodeConfig(QStringLiteral("volunteer-tiny")));
    QTRY_COMPARE_WITH_TIMEOUT(status.link, LinkState::Connected, 20000);

    QProcess researcher;
    m_node.submitTiny(researcher);
    QVERIFY(researcher.waitForStarted(10000));
    QTRY_VERIFY_WITH_TIMEOUT(status.tasksOpen >= 1, 60000); // held at the gate
    QTest::qWait(1000);
    QCOMPARE(status.counters.computed, 0);
    QVERIFY(researcher.state() != QProcess::NotRunning);

    bridge.setPlan(ComputePlan{true, false, 0, 100});
    QVERIFY(researcher.waitForFinished(60000));
    QVERIFY2(researcher.exitCode() == 0, researcher.readAllStandardError().constData());
    QVERIFY(researcher.readAllStandardOutput().startsWith("ok"));
    QTRY_COMPARE_WITH_TIMEOUT(status.counters.accepted, 16, 20000);
    QTRY_COMPARE_WITH_TIMEOUT(status.counters.computed, 16, 20000); // counted after it is sent
    QTRY_COMPARE_WITH_TIMEOUT(status.tasksOpen, 0, 20000);
    bridge.stop();
}

void TestEngineBridge::badUrlIsReported() {
    EngineBridge bridge;
    QSignalSpy errors(&bridge, &EngineBridge::linkError);
    bridge.start(BridgeConfig{{{QStringLiteral("http://not a url"), 100}}, m_node.path({}), 1, 0});
    QCOMPARE(errors.size(), 1);
    QVERIFY(!bridge.running());
}

// One engine per node, each with its share of the duty; a node that cannot be reached is retried
// with a growing back-off (shown in its status) while the other computes.
void TestEngineBridge::twoNodesEachGetTheirShare() {
    EngineBridge bridge;
    bridge.setPollInterval(50);
    std::vector<NodeStatus> nodes;
    QStringList log;
    connect(&bridge, &EngineBridge::nodesChanged, this,
            [&](const std::vector<NodeStatus>& next) { nodes = next; });
    connect(&bridge, &EngineBridge::logLine, this, [&](const QString& line) { log << line; });
    bridge.setPlan(ComputePlan{true, false, 1, 80});
    const QString unreachable = QStringLiteral("ws://127.0.0.1:1");
    bridge.start(BridgeConfig{{{m_node.url(), 75}, {unreachable, 25}},
                              m_node.path(QStringLiteral("volunteer3")),
                              1,
                              256 << 20});
    QCOMPARE(bridge.planOf(0).dutyPercent, 60);
    QCOMPARE(bridge.planOf(1).dutyPercent, 20);
    QTRY_VERIFY_WITH_TIMEOUT(nodes.size() == 2 && nodes[0].engine.link == LinkState::Connected &&
                                 nodes[1].engine.retryDelay.count() >= 1000,
                             20000);
    QCOMPARE(nodes[0].url, m_node.url());
    QCOMPARE(nodes[1].url, unreachable);
    QCOMPARE(nodes[1].engine.link, LinkState::Disconnected);
    QVERIFY(
        QString::fromStdString(nodes[1].engine.lastError).contains(QLatin1String("cannot reach")));
    // Back-off: 250, 500, 1000 ms … between attempts, never a tight loop.
    QVERIFY(
        log.filter(QStringLiteral("[") + unreachable + QStringLiteral("] reconnecting in 500 ms"))
            .size() == 1);

    bridge.setShares({50, 50});
    QCOMPARE(bridge.planOf(0).dutyPercent, 40);
    QTRY_VERIFY_WITH_TIMEOUT(nodes.size() == 2 && nodes[0].sharePercent == 50, 5000);
    bridge.stop();
}

// A node that refuses our protocol version: the engine stops trying (no reconnect loop), and the
// status says why.
void TestEngineBridge::refusedVersionIsNotRetried() {
    EngineBridge bridge;
    EngineStatus status;
    watch(bridge, status);
    QStringList log;
    connect(&bridge, &EngineBridge::logLine, this, [&](const QString& line) { log << line; });
    BridgeConfig config = nodeConfig(QStringLiteral("volunteer4"));
    config.memoryBytes = 0;
    config.protocolVersion = goblin::net::kProtocolVersion + 98;
    bridge.start(config);
    QTRY_COMPARE_WITH_TIMEOUT(status.link, LinkState::Refused, 20000);
    QVERIFY2(QString::fromStdString(status.lastError).contains(QLatin1String("version_mismatch")),
             status.lastError.c_str());
    QTest::qWait(2000);
    QCOMPARE(status.link, LinkState::Refused);
    QVERIFY2(log.filter(QStringLiteral("reconnecting")).isEmpty(), qPrintable(log.join('\n')));
    QCOMPARE(log.filter(QStringLiteral("not retrying")).size(), 1);
    bridge.stop();
}

QTEST_MAIN(TestEngineBridge)
#include "test_engine_bridge.moc"
