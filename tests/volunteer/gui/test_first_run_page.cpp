// The first run: with no settings saved the app opens on the first-run page, starts no engine
// until it is completed, offers conservative defaults (while idle, half the cores), refuses a
// bad answer in the page, and saves what was chosen; saved settings skip the page.
#include <QtTest>

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTemporaryDir>

#include <thread>

#include "first_run_page.hpp"
#include "main_window.hpp"
#include "volunteer_app.hpp"

using namespace goblin::volunteer;

class TestFirstRunPage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void init();
    void defaultsAreConservative();
    void problemsAreNamed();
    void nothingComputesUntilCompleted();
    void badAnswerIsRefusedInThePage();
    void savedSettingsSkipThePage();

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    QString iniPath() const { return m_dir->filePath(QStringLiteral("settings.ini")); }
};

namespace {

int halfTheCores() {
    return std::max(1, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) / 2);
}

AppOptions options(const QString& configDir, const QString& nodeUrl = {}) {
    AppOptions options{nodeUrl, configDir, true, [] { return HostState{}; }};
    options.trayAvailable = [] { return true; };
    return options;
}

} // namespace

void TestFirstRunPage::init() {
    m_dir = std::make_unique<QTemporaryDir>();
    QVERIFY(m_dir->isValid());
}

void TestFirstRunPage::defaultsAreConservative() {
    const FirstRunChoice eight = firstRunDefaults(8);
    QCOMPARE(eight.cpuCores, 4);
    QCOMPARE(eight.when, LendWhen::WhileIdle);
    QCOMPARE(eight.idleMinutes, 3);
    QCOMPARE(firstRunDefaults(1).cpuCores, 1);
    QCOMPARE(firstRunDefaults(3).cpuCores, 1);

    FirstRunChoice choice = eight;
    choice.nodeUrl = QStringLiteral(" ws://lab.example.org:8765 ");
    VolunteerSettings settings = firstRunSettings(choice);
    QCOMPARE(settings.nodes.size(), std::size_t{1});
    QCOMPARE(settings.nodes[0].url, QStringLiteral("ws://lab.example.org:8765"));
    QCOMPARE(settings.throttle.cpuCores, 4);
    QCOMPARE(settings.throttle.idleMinutes, 3);
    choice.when = LendWhen::Always;
    QCOMPARE(firstRunSettings(choice).throttle.idleMinutes, 0);
}

void TestFirstRunPage::problemsAreNamed() {
    FirstRunChoice choice = firstRunDefaults(4);
    QVERIFY(firstRunProblem(choice)->contains(QLatin1String("Enter the address")));
    choice.nodeUrl = QStringLiteral("lab.example.org:8765");
    QVERIFY(firstRunProblem(choice)->contains(QLatin1String("Not a lab node address")));
    choice.nodeUrl = QStringLiteral("ws://lab.example.org:8765");
    QVERIFY(!firstRunProblem(choice));
    choice.caFile = m_dir->filePath(QStringLiteral("ca.pem"));
    QVERIFY(firstRunProblem(choice)->contains(QLatin1String("only for wss://")));
    choice.nodeUrl = QStringLiteral("wss://lab.example.org:8765");
    QVERIFY(firstRunProblem(choice)->contains(QLatin1String("Cannot read the CA file")));
    QFile pem(choice.caFile);
    QVERIFY(pem.open(QIODevice::WriteOnly));
    pem.write("-----BEGIN CERTIFICATE-----\n");
    pem.close();
    QVERIFY(!firstRunProblem(choice));
}

void TestFirstRunPage::nothingComputesUntilCompleted() {
    QSettings store(iniPath(), QSettings::IniFormat);
    QVERIFY(isFirstRun(store));
    // --node only fills in the answer; nothing is attached or computed yet.
    VolunteerApp app(
        options(m_dir->filePath(QStringLiteral("id")), QStringLiteral("ws://127.0.0.1:1")), store);
    QVERIFY(app.firstRunPending());
    QVERIFY(app.window().showingFirstRun());
    QVERIFY(app.window().isVisible()); // shown even though it was asked to start minimized
    QVERIFY(!app.bridge().running());
    QVERIFY(app.settings().nodes.empty());
    QVERIFY(store.allKeys().isEmpty()); // nothing saved until the volunteer answers
    FirstRunPage* page = app.window().firstRunPage();
    QCOMPARE(page->findChild<QLineEdit*>(QStringLiteral("firstRunUrl"))->text(),
             QStringLiteral("ws://127.0.0.1:1"));
    QCOMPARE(page->findChild<QSpinBox*>(QStringLiteral("firstRunCores"))->value(), halfTheCores());
    QCOMPARE(page->findChild<QComboBox*>(QStringLiteral("firstRunWhen"))->currentIndex(), 0);
    QCOMPARE(page->choice().when, LendWhen::WhileIdle);

    page->findChild<QPushButton*>(QStringLiteral("firstRunStart"))->click();
    QVERIFY(!app.firstRunPending());
    QVERIFY(!app.window().showingFirstRun());
    QVERIFY(app.bridge().running());
    QCOMPARE(app.bridge().config().nodes.size(), std::size_t{1});
    QCOMPARE(app.bridge().config().nodes[0].url, QStringLiteral("ws://127.0.0.1:1"));
    QCOMPARE(store.value(QStringLiteral("nodes/1/url")).toString(),
             QStringLiteral("ws://127.0.0.1:1"));
    QCOMPARE(store.value(QStringLiteral("cpu/cores")).toInt(), halfTheCores());
    QCOMPARE(store.value(QStringLiteral("idle/minutes")).toInt(), 3);
    QCOMPARE(app.throttle().settings().idleMinutes, 3);
    QCOMPARE(app.throttle().settings().cpuCores, halfTheCores());
    // The probe says the user is active (no idle time known): the throttle holds the work.
    QVERIFY(!app.bridge().plan().run);
}

void TestFirstRunPage::badAnswerIsRefusedInThePage() {
    QSettings store(iniPath(), QSettings::IniFormat);
    VolunteerApp app(options(m_dir->filePath(QStringLiteral("id"))), store);
    FirstRunPage* page = app.window().firstRunPage();
    auto* start = page->findChild<QPushButton*>(QStringLiteral("firstRunStart"));
    auto* message = page->findChild<QLabel*>(QStringLiteral("firstRunMessage"));
    start->click();
    QVERIFY2(message->text().contains(QLatin1String("Enter the address")),
             qPrintable(message->text()));
    page->findChild<QLineEdit*>(QStringLiteral("firstRunUrl"))->setText(QStringLiteral("nonsense"));
    start->click();
    QVERIFY2(message->text().contains(QLatin1String("Not a lab node address")),
             qPrintable(message->text()));
    QVERIFY(app.firstRunPending());
    QVERIFY(!app.bridge().running());
    QVERIFY(store.allKeys().isEmpty());

    // Always, on one core: also a valid answer.
    page->findChild<QLineEdit*>(QStringLiteral("firstRunUrl"))
        ->setText(QStringLiteral("ws://127.0.0.1:1"));
    page->findChild<QComboBox*>(QStringLiteral("firstRunWhen"))->setCurrentIndex(1);
    page->findChild<QSpinBox*>(QStringLiteral("firstRunCores"))->setValue(1);
    QVERIFY(!page->findChild<QSpinBox*>(QStringLiteral("firstRunIdleMinutes"))->isEnabled());
    start->click();
    QVERIFY(message->isHidden());
    QVERIFY(!app.firstRunPending());
    QCOMPARE(store.value(QStringLiteral("idle/minutes")).toInt(), 0);
    QCOMPARE(store.value(QStringLiteral("cpu/cores")).toInt(), 1);
    QVERIFY(app.bridge().plan().run);
}

void TestFirstRunPage::savedSettingsSkipThePage() {
    {
        QSettings store(iniPath(), QSettings::IniFormat);
        store.setValue(QStringLiteral("cpu/limit_percent"), 50);
    }
    QSettings store(iniPath(), QSettings::IniFormat);
    QVERIFY(!isFirstRun(store));
    VolunteerApp app(
        options(m_dir->filePath(QStringLiteral("id")), QStringLiteral("ws://127.0.0.1:1")), store);
    QVERIFY(!app.firstRunPending());
    QVERIFY(!app.window().showingFirstRun());
    QVERIFY(!app.window().isVisible()); // minimized to the tray, as asked
    QVERIFY(app.bridge().running());
    QCOMPARE(store.value(QStringLiteral("nodes/1/url")).toString(),
             QStringLiteral("ws://127.0.0.1:1"));
}

QTEST_MAIN(TestFirstRunPage)
#include "test_first_run_page.moc"
