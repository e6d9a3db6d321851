// The whole desktop app (window, throttle, bridge, engine) against a real lab node: tasks run at
// the CPU limit set in the settings; "finish current task, then pause" lets the running task end,
// starts no other and then shows "paused"; resuming finishes the job. The status page follows.
#include <QtTest>

#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTableWidget>

#include "lab_node_fixture.hpp"
#include "main_window.hpp"
#include "nodes_page.hpp"
#include "settings_page.hpp"
#include "volunteer_app.hpp"

using namespace goblin::volunteer;

class TestVolunteerApp : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void finishCurrentTaskThenPause();
    void unreachableNodeIsShown();
    void twoNodesShareTheTime();
    void refusedProtocolIsShownAndNotRetried();
    void gpuSwitchRestartsOnTheDevice();
    void trayHostLossShowsTheWindow();

private:
    goblin::testing::LabNodeFixture m_node;
    goblin::testing::LabNodeFixture m_node2;
};

namespace {

QString eventLog(VolunteerApp& app) {
    return app.window().findChild<QPlainTextEdit*>(QStringLiteral("eventLog"))->toPlainText();
}

// A volunteer who has been through the first run (an empty store opens on the first-run page).
void markSetUp(QSettings& store) {
    store.setValue(QStringLiteral("general/start_at_login"), false);
}

void addNodeByHand(VolunteerApp& app, const QString& url) {
    NodesPage* page = app.window().nodesPage();
    page->findChild<QLineEdit*>(QStringLiteral("nodeUrl"))->setText(url);
    page->findChild<QPushButton*>(QStringLiteral("addNode"))->click();
}

} // namespace

void TestVolunteerApp::initTestCase() {
    if (const QString why = m_node.start(); !why.isEmpty())
        QSKIP(qPrintable(why));
    if (const QString why = m_node2.start(); !why.isEmpty())
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
    // A task's `computed` reaches the status after its result is sent, so a verdict can show
    // first (accepted 2, computed 1): the tally catches up with the next status.
    QTRY_COMPARE_WITH_TIMEOUT(store.value(QStringLiteral("tally/tasks_today")).toInt(), 2, 60000);
}

void TestVolunteerApp::unreachableNodeIsShown() {
    QSettings store(m_node.path(QStringLiteral("app2.ini")), QSettings::IniFormat);
    markSetUp(store);
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

// Two lab nodes added by hand (a bad address first), shares 3:1 split the CPU time; each node's
// job is computed and accepted; the status page lists both; removing one keeps the other.
void TestVolunteerApp::twoNodesShareTheTime() {
    QSettings store(m_node.path(QStringLiteral("app3.ini")), QSettings::IniFormat);
    store.setValue(QStringLiteral("cpu/limit_percent"), 80);
    HostState host;
    host.hardwareThreads = 2;
    VolunteerApp app(AppOptions{{}, m_node.path(QStringLiteral("id4")), true, [&] { return host; }},
                     store);
    app.bridge().setPollInterval(50);
    NodesPage* page = app.window().nodesPage();
    auto* table = page->findChild<QTableWidget*>(QStringLiteral("nodes"));
    auto* message = page->findChild<QLabel*>(QStringLiteral("nodeMessage"));
    addNodeByHand(app, QStringLiteral("lab.example.org:8765"));
    QVERIFY2(message->text().contains(QLatin1String("Not a lab node address")),
             qPrintable(message->text()));
    QCOMPARE(table->rowCount(), 0);
    addNodeByHand(app, m_node.url());
    addNodeByHand(app, m_node2.url());
    addNodeByHand(app, m_node2.url());
    QVERIFY(message->text().contains(QLatin1String("already in the list")));
    QCOMPARE(table->rowCount(), 2);
    page->findChild<QSpinBox*>(QStringLiteral("share_0"))->setValue(3);
    QCOMPARE(app.bridge().planOf(0).dutyPercent, 60);
    QCOMPARE(app.bridge().planOf(1).dutyPercent, 20);
    QCOMPARE(store.value(QStringLiteral("nodes/size")).toInt(), 2);
    QCOMPARE(store.value(QStringLiteral("nodes/1/share")).toInt(), 3);
    QTRY_VERIFY_WITH_TIMEOUT(app.nodeStatuses().size() == 2 &&
                                 app.nodeStatuses()[0].engine.link == LinkState::Connected &&
                                 app.nodeStatuses()[1].engine.link == LinkState::Connected,
                             20000);
    QCOMPARE(page->connectionText(m_node.url()), QStringLiteral("connected"));
    QCOMPARE(table->item(0, 2)->text(), QStringLiteral("75 %"));

    QProcess first, second;
    m_node.submit(first, 512, 512);
    m_node2.submit(second, 512, 512);
    QTRY_VERIFY_WITH_TIMEOUT(app.nodeStatuses()[0].engine.counters.accepted == 1 &&
                                 app.nodeStatuses()[1].engine.counters.accepted == 1,
                             60000);
    for (QProcess* researcher : {&first, &second}) {
        // It may have finished already, while the checks above waited.
        QVERIFY(researcher->state() == QProcess::NotRunning || researcher->waitForFinished(60000));
        QVERIFY2(researcher->exitCode() == 0, researcher->readAllStandardError().constData());
    }
    auto* rows = app.window().findChild<QTableWidget*>(QStringLiteral("devices"));
    // The table follows the engine's counters on the window's next refresh, not at once.
    QTRY_VERIFY_WITH_TIMEOUT(rows->rowCount() == 2 && rows->item(1, 4) != nullptr &&
                                 rows->item(1, 4)->text() == QStringLiteral("1"),
                             20000);
    QTRY_VERIFY(app.window()
                    .findChild<QLabel*>(QStringLiteral("totals"))
                    ->text()
                    .contains(QLatin1String("accepted 2 / rejected 0")));

    table->selectRow(1);
    page->findChild<QPushButton*>(QStringLiteral("removeNode"))->click();
    QCOMPARE(table->rowCount(), 1);
    QCOMPARE(app.bridge().config().nodes.size(), std::size_t{1});
    QCOMPARE(app.bridge().planOf(0).dutyPercent, 80);
    QCOMPARE(store.value(QStringLiteral("nodes/size")).toInt(), 1);
}

// A node that refuses the protocol version: the window says so in words, the tray shows the
// error state, and the engine does not come back to the node in a loop.
void TestVolunteerApp::refusedProtocolIsShownAndNotRetried() {
    QSettings store(m_node.path(QStringLiteral("app4.ini")), QSettings::IniFormat);
    markSetUp(store);
    AppOptions options{m_node.url(), m_node.path(QStringLiteral("id5")), true,
                       [] { return HostState{}; }};
    options.protocolVersion = goblin::net::kProtocolVersion + 1;
    VolunteerApp app(options, store);
    app.bridge().setPollInterval(50);
    QTRY_COMPARE_WITH_TIMEOUT(app.state(), VolunteerState::Error, 20000);
    const QString shown = app.window().nodesPage()->connectionText(m_node.url());
    QVERIFY2(
        shown.startsWith(QStringLiteral("refused: the lab node speaks another protocol version")),
        qPrintable(shown));
    QVERIFY(app.window().findChild<QLabel*>(QStringLiteral("link"))->text().contains(shown));
    QTest::qWait(1500);
    QCOMPARE(app.nodeStatuses().front().engine.link, LinkState::Refused);
    QVERIFY2(!eventLog(app).contains(QLatin1String("reconnecting")), qPrintable(eventLog(app)));
}

// Switching the OpenCL device on restarts the engine on it (PoCL's CPU device is "gpu0" here);
// its GPU-time limit caps the duty live; switching it off goes back to the CPU.
void TestVolunteerApp::gpuSwitchRestartsOnTheDevice() {
    QSettings store(m_node.path(QStringLiteral("app5.ini")), QSettings::IniFormat);
    markSetUp(store);
    AppOptions options{m_node.url(), m_node.path(QStringLiteral("id6")), true,
                       [] { return HostState{}; }};
    options.openClCpuDevices = OpenClCpuDevices::Offer; // PoCL's CPU device stands in for a GPU
    VolunteerApp app(options, store);
    app.bridge().setPollInterval(50);
    SettingsPage* page = app.window().settingsPage();
    auto* enabled = page->findChild<QCheckBox*>(QStringLiteral("gpuEnabled_gpu0"));
    if (!enabled)
        QSKIP("no OpenCL device gpu0 (install pocl-opencl-icd)");
    QVERIFY(!enabled->isChecked()); // GPUs are off until the volunteer switches them on
    QCOMPARE(app.bridge().config().devices, QStringLiteral("cpu"));
    enabled->setChecked(true);
    QCOMPARE(app.bridge().config().devices, QStringLiteral("cpu,gpu0"));
    QCOMPARE(store.value(QStringLiteral("gpus/1/enabled")).toBool(), true);
    // Until the restart lands, a status of the engine it replaces (connected, on the CPU) may
    // still arrive: wait for the restarted one.
    QTRY_VERIFY2_WITH_TIMEOUT(!app.nodeStatuses().empty() &&
                                  app.nodeStatuses()[0].engine.link == LinkState::Connected &&
                                  app.nodeStatuses()[0].engine.backend == "opencl-clblast",
                              qPrintable(eventLog(app)), 60000);
    page->findChild<QSpinBox*>(QStringLiteral("gpuLimit_gpu0"))->setValue(30);
    QCOMPARE(app.bridge().plan().dutyPercent, 30);
    QCOMPARE(app.bridge().config().devices, QStringLiteral("cpu,gpu0")); // no restart for a limit
    enabled->setChecked(false);
    QCOMPARE(app.bridge().config().devices, QStringLiteral("cpu"));
    QCOMPARE(app.bridge().plan().dutyPercent, 100);
    QTRY_VERIFY_WITH_TIMEOUT(
        !app.nodeStatuses().empty() && app.nodeStatuses()[0].engine.backend == "cpu-eigen", 20000);
}

// The tray host goes away (e.g. the panel crashed): the window comes up, the app says so and
// closing the window now quits; when the host is back, closing only hides again.
void TestVolunteerApp::trayHostLossShowsTheWindow() {
    QSettings store(m_node.path(QStringLiteral("app6.ini")), QSettings::IniFormat);
    markSetUp(store);
    bool trayHost = true;
    AppOptions options{{}, m_node.path(QStringLiteral("id7")), true, [] { return HostState{}; }};
    options.trayAvailable = [&] { return trayHost; };
    VolunteerApp app(options, store);
    QVERIFY(app.tray());
    QVERIFY(!app.window().isVisible()); // started minimized to the tray
    QVERIFY(!QApplication::quitOnLastWindowClosed());
    trayHost = false;
    app.checkTrayHost();
    QVERIFY(app.window().isVisible());
    QVERIFY(!app.tray());
    QVERIFY(QApplication::quitOnLastWindowClosed());
    QVERIFY(eventLog(app).contains(QLatin1String("the system tray went away: showing the window")));
    trayHost = true;
    app.checkTrayHost();
    QVERIFY(app.tray());
    QVERIFY(!QApplication::quitOnLastWindowClosed());

    // No tray host at all from the start: the window shows at once, minimized or not.
    QSettings store2(m_node.path(QStringLiteral("app7.ini")), QSettings::IniFormat);
    markSetUp(store2);
    options.trayAvailable = [] { return false; };
    VolunteerApp bare(options, store2);
    QVERIFY(bare.window().isVisible());
    QVERIFY(eventLog(bare).contains(QLatin1String("no system tray is available")));
}

QTEST_MAIN(TestVolunteerApp)
#include "test_volunteer_app.moc"
