// Pause and resume from the main window: its button and the tray's menu drive the same pause,
// and both read Resume while it holds — whichever of the two paused.
#include <QtTest>

#include <QMenu>
#include <QPushButton>
#include <QSettings>
#include <QTemporaryDir>

#include "main_window.hpp"
#include "tray_icon.hpp"
#include "volunteer_app.hpp"

using namespace goblin::volunteer;

class TestWindowPause : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void windowAndTrayShareThePause();
    void hiddenDuringTheFirstRun();
};

namespace {

QAction* trayAction(TrayIcon& tray, int index) {
    return tray.icon().contextMenu()->actions().at(index); // 0: pause/resume, 1: for an hour
}

AppOptions options(const QString& configDir) {
    AppOptions options{{}, configDir, false, [] { return HostState{}; }};
    options.trayAvailable = [] { return true; };
    return options;
}

} // namespace

void TestWindowPause::windowAndTrayShareThePause() {
    QTemporaryDir dir;
    QSettings store(dir.filePath(QStringLiteral("settings.ini")), QSettings::IniFormat);
    store.setValue(QStringLiteral("cpu/limit_percent"), 100); // set up: no first run
    VolunteerApp app(options(dir.filePath(QStringLiteral("id"))), store);
    QVERIFY(app.tray());
    QPushButton* button = app.window().pauseButton();
    QVERIFY(button->isVisible());
    QCOMPARE(button->text(), QStringLiteral("Pause"));
    QVERIFY(app.bridge().plan().run);

    button->click();
    QVERIFY(app.throttle().userPaused());
    QVERIFY(!app.bridge().plan().run);
    QCOMPARE(app.state(), VolunteerState::PausedByUser);
    QCOMPARE(button->text(), QStringLiteral("Resume"));
    QCOMPARE(trayAction(*app.tray(), 0)->text(), QStringLiteral("Resume"));

    trayAction(*app.tray(), 0)->trigger(); // resumed from the tray
    QVERIFY(!app.throttle().userPaused());
    QVERIFY(app.bridge().plan().run);
    QCOMPARE(button->text(), QStringLiteral("Pause"));
    QCOMPARE(trayAction(*app.tray(), 0)->text(), QStringLiteral("Pause"));

    trayAction(*app.tray(), 1)->trigger(); // paused for an hour from the tray
    QCOMPARE(button->text(), QStringLiteral("Resume"));
    button->click(); // resumed from the window
    QVERIFY(!app.throttle().userPaused());
    QVERIFY(app.bridge().plan().run);
    QCOMPARE(trayAction(*app.tray(), 0)->text(), QStringLiteral("Pause"));
}

void TestWindowPause::hiddenDuringTheFirstRun() {
    QTemporaryDir dir;
    QSettings store(dir.filePath(QStringLiteral("settings.ini")), QSettings::IniFormat);
    VolunteerApp app(options(dir.filePath(QStringLiteral("id"))), store);
    QVERIFY(app.firstRunPending());
    QVERIFY(!app.window().pauseButton()->isVisible()); // nothing runs that it could pause
}

QTEST_MAIN(TestWindowPause)
#include "test_window_pause.moc"
