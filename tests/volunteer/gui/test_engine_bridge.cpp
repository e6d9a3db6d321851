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
    void pauseHoldsWithinASecond();
    void longPauseHandsTasksBack();
    void badUrlIsReported();

private:
    goblin::testing::LabNodeFixture m_node;
};

void TestEngineBridge::initTestCase() {
    if (const QString why = m_node.start(); !why.isEmpty())
        QSKIP(qPrintable(why));
    if (!goblin::testing::LabNodeFixture::havePython())
        QSKIP("no .venv with the Python client (scripts/python_env.sh makes it)");
}

void TestEngineBridge::pauseHoldsWithinASecond() {
    EngineBridge bridge;
    bridge.setPollInterval(50);
    EngineStatus status;
    connect(&bridge, &EngineBridge::statusChanged, this,
            [&](const EngineStatus& next) { status = next; });
    // 10 % CPU time: the tile takes seconds of wall time, in slices of about 50 ms.
    bridge.setPlan(ComputePlan{true, false, 1, 10});
    bridge.start(
        BridgeConfig{m_node.url(), m_node.path(QStringLiteral("volunteer")), 1, 256 << 20});
    QTRY_COMPARE_WITH_TIMEOUT(status.link, LinkState::Connected, 20000);

    QProcess researcher;
    m_node.submit(researcher, 2048, 2048); // one 2048×1024 f64 tile: ~4 GFLOP
    QVERIFY(researcher.waitForStarted(10000));

    QTRY_VERIFY_WITH_TIMEOUT(status.running && status.running->fraction > 0, 60000);
    bridge.setPlan(ComputePlan{false, false, 1, 10});
    QTRY_VERIFY_WITH_TIMEOUT(status.parked, 1000); // the pause holds within a second
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
    QCOMPARE(status.counters.computed, 1);
    QVERIFY(status.counters.computeSeconds > 0);
    bridge.stop();
}

// Paused past releaseAfterPause while holding a task, the engine hangs up (the node re-queues the
// task); on resume it reconnects, gets the task again and the job completes.
void TestEngineBridge::longPauseHandsTasksBack() {
    EngineBridge bridge;
    bridge.setPollInterval(50);
    EngineStatus status;
    connect(&bridge, &EngineBridge::statusChanged, this,
            [&](const EngineStatus& next) { status = next; });
    bridge.setPlan(ComputePlan{false, false, 1, 100});
    BridgeConfig config{m_node.url(), m_node.path(QStringLiteral("volunteer2")), 1, 256 << 20};
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

void TestEngineBridge::badUrlIsReported() {
    EngineBridge bridge;
    QSignalSpy errors(&bridge, &EngineBridge::linkError);
    bridge.start(BridgeConfig{QStringLiteral("http://not a url"), m_node.path({}), 1, 0});
    QCOMPARE(errors.size(), 1);
    QVERIFY(!bridge.running());
}

QTEST_MAIN(TestEngineBridge)
#include "test_engine_bridge.moc"
