// The whole desktop app (window, throttle, bridge, engine) against a real lab node: tasks run at
// the CPU limit set in the settings; "finish current task, then pause" lets the running task end,
// starts no other and then shows "paused"; resuming finishes the job. The status page follows.
#include <QtTest>

#include <QLabel>
#include <QSettings>

#include "lab_node_fixture.hpp"
#include "main_window.hpp"
#include "volunteer_app.hpp"

using namespace goblin::volunteer;

class TestVolunteerApp : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void finishCurrentTaskThenPause();
    void unreachableNodeIsShown();

private:
    goblin::testing::LabNodeFixture m_node;
};

void TestVolunteerApp::initTestCase() {
    if (const QString why = m_node.start(); !why.isEmpty())
        QSKIP(qPrintable(why));
    if (!goblin::testing::LabNodeFixture::havePython())
        QSKIP("no .venv with the Python client (scripts/python_env.sh makes it)");
}

void TestVolunteerApp::finishCurrentTaskThenPause() {
    QSettings store(m_node.path(QStringLiteral("app.ini")), QSettings::IniFormat);
    store.setValue(QStringLiteral("cpu/cores"), 1);
    store.setValue(QStringLiteral("cpu/limit_percent"), 10); // each tile takes a few seconds
    HostState host;
    host.hardwareThreads = 2;
    VolunteerApp app(
        AppOptions{m_node.url(), m_node.path(QStringLiteral("id")), true, [&] { return host; }},
        store);
    app.bridge().setPollInterval(50);
    EngineStatus status;
    connect(&app.bridge(), &EngineBridge::statusChanged, this,
            [&](const EngineStatus& next) { status = next; });
    QTRY_COMPARE_WITH_TIMEOUT(status.link, LinkState::Connected, 20000);
    QCOMPARE(app.bridge().plan().dutyPercent, 10);
    QCOMPARE(app.bridge().plan().threads, 1);

    QProcess researcher;
    m_node.submit(researcher, 2048, 1024); // two 1024×1024 f64 tiles, both leased here (2 slots)
    QTRY_VERIFY_WITH_TIMEOUT(
        status.running && status.running->fraction > 0 && status.tasksOpen == 2, 60000);
    const std::int64_t first = status.running->task;
    app.finishThenPause();
    QTRY_COMPARE_WITH_TIMEOUT(app.state(), VolunteerState::PausedByUser, 60000);
    QCOMPARE(status.counters.computed, 1);
    QCOMPARE(status.tasksOpen, 1);
    QTest::qWait(1000);
    QVERIFY(!status.running || status.running->task != first);
    QCOMPARE(status.counters.computed, 1); // the second task did not start
    QVERIFY(!app.bridge().plan().run);
    const auto* state = app.window().findChild<QLabel*>(QStringLiteral("state"));
    QCOMPARE(state->text(), QStringLiteral("paused by you"));

    app.togglePause();
    QVERIFY(app.bridge().plan().run);
    QTRY_VERIFY_WITH_TIMEOUT(status.counters.accepted == 2, 60000);
    QVERIFY(researcher.waitForFinished(60000));
    QVERIFY2(researcher.exitCode() == 0, researcher.readAllStandardError().constData());
    QCOMPARE(store.value(QStringLiteral("tally/tasks_today")).toInt(), 2);
}

void TestVolunteerApp::unreachableNodeIsShown() {
    QSettings store(m_node.path(QStringLiteral("app2.ini")), QSettings::IniFormat);
    VolunteerApp app(AppOptions{QStringLiteral("ws://127.0.0.1:1"),
                                m_node.path(QStringLiteral("id2")), true,
                                [] { return HostState{}; }},
                     store);
    app.bridge().setPollInterval(50);
    QTRY_COMPARE_WITH_TIMEOUT(app.state(), VolunteerState::Disconnected, 10000);
    QTRY_VERIFY_WITH_TIMEOUT(
        app.window()
            .findChild<QLabel*>(QStringLiteral("state"))
            ->text()
            .startsWith(QStringLiteral("disconnected: cannot reach the lab node")),
        10000);
    VolunteerApp bad(AppOptions{QStringLiteral("not-a-url"), m_node.path(QStringLiteral("id3")),
                                true, [] { return HostState{}; }},
                     store);
    QCOMPARE(bad.state(), VolunteerState::Error);
}

QTEST_MAIN(TestVolunteerApp)
#include "test_volunteer_app.moc"
