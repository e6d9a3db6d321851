// The tray icon: every state has a goblin that renders (needs Qt's SVG plugin, libqt6svg6), the
// menu's actions reach the app, and the state decides icon, pause/resume label and tooltip (a
// disconnected one says why, without a bare colon before setup).
#include <QtTest>

#include <QMenu>

#include "tray_icon.hpp"

using namespace goblin::volunteer;

namespace {

QAction* action(TrayIcon& tray, const QString& text) {
    for (QAction* item : tray.icon().contextMenu()->actions())
        if (item->text() == text)
            return item;
    return nullptr;
}

} // namespace

class TestTrayIcon : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void everyStateIconRenders();
    void menuActionsReachTheApp();
    void stateDecidesLabelAndTooltip();
    void disconnectedTooltipSaysWhy();
};

void TestTrayIcon::everyStateIconRenders() {
    for (VolunteerState state :
         {VolunteerState::Computing, VolunteerState::PausedByUser, VolunteerState::Waiting,
          VolunteerState::Disconnected, VolunteerState::Error}) {
        const QImage image = stateIcon(state).pixmap(32, 32).toImage();
        QVERIFY2(!image.isNull(), qPrintable(stateName(state)));
        int opaque = 0;
        for (int y = 0; y < image.height(); ++y)
            for (int x = 0; x < image.width(); ++x)
                opaque += qAlpha(image.pixel(x, y)) > 128;
        QVERIFY2(opaque > 200, qPrintable(stateName(state) + QStringLiteral(": blank icon")));
    }
}

void TestTrayIcon::menuActionsReachTheApp() {
    TrayIcon tray;
    QSignalSpy pause(&tray, &TrayIcon::pauseToggled);
    QSignalSpy hour(&tray, &TrayIcon::pauseHourRequested);
    QSignalSpy finish(&tray, &TrayIcon::finishThenPauseRequested);
    QSignalSpy open(&tray, &TrayIcon::openWindowRequested);
    QSignalSpy quit(&tray, &TrayIcon::quitRequested);
    for (const QString& text : {QStringLiteral("Pause"), QStringLiteral("Pause for 1 hour"),
                                QStringLiteral("Finish current task, then pause"),
                                QStringLiteral("Open window"), QStringLiteral("Quit")}) {
        QAction* item = action(tray, text);
        QVERIFY2(item, qPrintable(text));
        item->trigger();
    }
    for (const QSignalSpy* spy : {&pause, &hour, &finish, &open, &quit})
        QCOMPARE(spy->size(), 1);
}

void TestTrayIcon::stateDecidesLabelAndTooltip() {
    TrayIcon tray;
    tray.showState(VolunteerState::PausedByUser, QStringLiteral("GPU Goblin — paused by you"));
    QVERIFY(action(tray, QStringLiteral("Resume")));
    QCOMPARE(tray.icon().toolTip(), QStringLiteral("GPU Goblin — paused by you"));
    tray.showState(VolunteerState::Computing, QStringLiteral("computing"));
    QVERIFY(action(tray, QStringLiteral("Pause")));
    QVERIFY(!action(tray, QStringLiteral("Resume")));

    EngineStatus status;
    status.link = LinkState::Connected;
    status.backend = "cpu-eigen";
    status.running = TaskProgress{7, 0.5};
    ThrottleDecision run{true, ThrottleReason::None, 2, 100, {}};
    QCOMPARE(volunteerState(run, status, false), VolunteerState::Computing);
    QCOMPARE(stateTooltip(VolunteerState::Computing, run, status),
             QStringLiteral("GPU Goblin — computing on CPU (task 7, 50 %)"));
    ThrottleDecision battery{false, ThrottleReason::OnBattery, 2, 100, {}};
    QCOMPARE(volunteerState(battery, status, false), VolunteerState::Waiting);
    QCOMPARE(stateTooltip(VolunteerState::Waiting, battery, status),
             QStringLiteral("GPU Goblin — waiting: on battery"));
    ThrottleDecision paused{false, ThrottleReason::UserPaused, 2, 100, {}};
    QCOMPARE(volunteerState(paused, status, false), VolunteerState::PausedByUser);
    status.link = LinkState::Disconnected;
    QCOMPARE(volunteerState(run, status, false), VolunteerState::Disconnected);
    QCOMPARE(volunteerState(run, status, true), VolunteerState::Error);
    status.link = LinkState::Refused;
    QCOMPARE(volunteerState(paused, status, false), VolunteerState::Error);
}

void TestTrayIcon::disconnectedTooltipSaysWhy() {
    const ThrottleDecision run{true, ThrottleReason::None, 2, 100, {}};
    EngineStatus status;
    status.link = LinkState::Stopped; // before the first-run page is done: no node attached
    QCOMPARE(volunteerState(run, status, false), VolunteerState::Disconnected);
    QCOMPARE(stateTooltip(VolunteerState::Disconnected, run, status),
             QStringLiteral("GPU Goblin — not set up yet: no lab node attached"));
    status.link = LinkState::Connecting;
    QCOMPARE(stateTooltip(VolunteerState::Disconnected, run, status),
             QStringLiteral("GPU Goblin — connecting to the lab node"));
    status.link = LinkState::Disconnected;
    QCOMPARE(stateTooltip(VolunteerState::Disconnected, run, status),
             QStringLiteral("GPU Goblin — disconnected"));
    status.lastError = "connection refused";
    QCOMPARE(stateTooltip(VolunteerState::Disconnected, run, status),
             QStringLiteral("GPU Goblin — disconnected: connection refused"));
    status.link = LinkState::Released; // held back by the throttle, not necessarily paused
    QVERIFY(!linkText(status).contains(QLatin1String("paused")));
}

QTEST_MAIN(TestTrayIcon)
#include "test_tray_icon.moc"
