// The settings page drives the throttle live: edits reach the compute plan the engine gets and
// are saved; corrupt or out-of-range stored values are clamped and logged.
#include <QtTest>

#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSlider>
#include <QSpinBox>
#include <QTemporaryDir>

#include "first_run_page.hpp"
#include "goblin/compute/opencl_devices.hpp"
#include "main_window.hpp"
#include "settings_page.hpp"
#include "volunteer_app.hpp"

using namespace goblin::volunteer;

class TestSettingsPage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void init();
    void editsReachTheEnginePlan();
    void idleRuleFollowsTheProbe();
    void badScheduleKeepsTheLastGood();
    void emptyScheduleIsRefused();
    void emptyStoredScheduleIsSwitchedOff();
    void openClCpuDeviceIsNotOfferedAsGpu();
    void corruptValuesAreClampedAndLogged();
    void scheduleText();
    void startAtLoginWritesTheAutostartEntry();
    void corruptNodesAndGpusAreDroppedAndLogged();
    void nodesAndGpusRoundTrip();
    void oneNodeSettingIsCarriedOver();
    void coresAreCountedInEnglish();

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    QString iniPath() const { return m_dir->filePath(QStringLiteral("settings.ini")); }
};

void TestSettingsPage::init() {
    m_dir = std::make_unique<QTemporaryDir>();
    QVERIFY(m_dir->isValid());
}

void TestSettingsPage::editsReachTheEnginePlan() {
    QSettings store(iniPath(), QSettings::IniFormat);
    HostState host;
    host.hardwareThreads = 4;
    VolunteerApp app(AppOptions{{}, m_dir->path(), true, [&] { return host; }}, store);
    SettingsPage* page = app.window().settingsPage();
    page->findChild<QSpinBox*>(QStringLiteral("cpuCores"))->setValue(1);
    page->findChild<QSlider*>(QStringLiteral("cpuLimit"))->setValue(25);
    const ComputePlan plan = app.bridge().plan();
    QVERIFY(plan.run);
    QCOMPARE(plan.threads, 1);
    QCOMPARE(plan.dutyPercent, 25);
    QCOMPARE(store.value(QStringLiteral("cpu/cores")).toInt(), 1);
    QCOMPARE(store.value(QStringLiteral("cpu/limit_percent")).toInt(), 25);

    page->findChild<QCheckBox*>(QStringLiteral("pauseOnBattery"))->setChecked(true);
    host.onBattery = true;
    app.throttle().evaluate();
    QVERIFY(!app.bridge().plan().run);
    QCOMPARE(app.state(), VolunteerState::Waiting);
    page->findChild<QCheckBox*>(QStringLiteral("pauseOnBattery"))->setChecked(false);
    QVERIFY(app.bridge().plan().run);
}

void TestSettingsPage::idleRuleFollowsTheProbe() {
    QSettings store(iniPath(), QSettings::IniFormat);
    HostState host;
    host.idleSeconds = 0;
    VolunteerApp app(AppOptions{{}, m_dir->path(), true, [&] { return host; }}, store);
    app.window().settingsPage()->findChild<QSpinBox*>(QStringLiteral("idleMinutes"))->setValue(5);
    QVERIFY(!app.bridge().plan().run);
    QCOMPARE(app.throttle().decision().reason, ThrottleReason::NotIdle);
    host.idleSeconds = 301;
    app.throttle().evaluate();
    QVERIFY(app.bridge().plan().run);
    host.idleSeconds.reset(); // the probe stopped working
    app.throttle().evaluate();
    QCOMPARE(app.throttle().decision().reason, ThrottleReason::IdleUnknown);
}

void TestSettingsPage::badScheduleKeepsTheLastGood() {
    QSettings store(iniPath(), QSettings::IniFormat);
    VolunteerApp app(AppOptions{{}, m_dir->path(), true, [] { return HostState{}; }}, store);
    SettingsPage* page = app.window().settingsPage();
    auto* text = page->findChild<QLineEdit*>(QStringLiteral("schedule"));
    text->setText(QStringLiteral("Mon-Fri 09:00-17:00"));
    Q_EMIT text->editingFinished();
    page->findChild<QCheckBox*>(QStringLiteral("scheduleEnabled"))->setChecked(true);
    QCOMPARE(app.throttle().settings().schedule.size(), std::size_t{5});
    QVERIFY(app.throttle().settings().scheduleEnabled);
    text->setText(QStringLiteral("Mon 9-5"));
    Q_EMIT text->editingFinished();
    QCOMPARE(app.throttle().settings().schedule.size(), std::size_t{5});
    QCOMPARE(store.value(QStringLiteral("schedule/hours")).toString(),
             QStringLiteral("Mon-Fri 09:00-17:00"));
}

// A schedule switched on must name hours: an empty one is refused in the form (it would mean
// "never"), with a message, and what held before still holds; stored, it is switched off.
void TestSettingsPage::emptyScheduleIsRefused() {
    QSettings store(iniPath(), QSettings::IniFormat);
    store.setValue(QStringLiteral("cpu/limit_percent"), 100); // set up: no first run
    VolunteerApp app(AppOptions{{}, m_dir->path(), true, [] { return HostState{}; }}, store);
    SettingsPage* page = app.window().settingsPage();
    auto* text = page->findChild<QLineEdit*>(QStringLiteral("schedule"));
    auto* enabled = page->findChild<QCheckBox*>(QStringLiteral("scheduleEnabled"));
    auto* error = page->findChild<QLabel*>(QStringLiteral("scheduleError"));
    enabled->setChecked(true); // with no hours written
    QVERIFY(!error->isHidden());
    QVERIFY2(error->text().startsWith(QStringLiteral("Not applied: the schedule names no hours")),
             qPrintable(error->text()));
    QVERIFY(!app.throttle().settings().scheduleEnabled);
    QVERIFY(app.bridge().plan().run); // not "no hours": nothing stopped
    QCOMPARE(store.value(QStringLiteral("schedule/enabled")).toBool(), false);
    text->setText(QStringLiteral(" ; ; "));
    Q_EMIT text->editingFinished();
    QVERIFY(!error->isHidden());
    QVERIFY(!app.throttle().settings().scheduleEnabled);

    text->setText(QStringLiteral("Sat-Sun 00:00-24:00"));
    Q_EMIT text->editingFinished();
    QVERIFY(error->isHidden());
    QVERIFY(app.throttle().settings().scheduleEnabled);
    QCOMPARE(app.throttle().settings().schedule.size(), std::size_t{2});
    text->clear(); // emptied again: refused, the weekend still holds
    Q_EMIT text->editingFinished();
    QVERIFY(!error->isHidden());
    QVERIFY(app.throttle().settings().scheduleEnabled);
    QCOMPARE(app.throttle().settings().schedule.size(), std::size_t{2});
    QCOMPARE(store.value(QStringLiteral("schedule/hours")).toString(),
             QStringLiteral("Sat-Sun 00:00-24:00"));
    enabled->setChecked(false); // switched off, an empty text is fine
    QVERIFY(error->isHidden());
    QVERIFY(!app.throttle().settings().scheduleEnabled);

    QString why;
    QVERIFY(!usableSchedule(QString(), ScheduleUse::On, &why));
    QVERIFY(why.contains(QLatin1String("names no hours")));
    QVERIFY(usableSchedule(QString(), ScheduleUse::Off, &why));
    QVERIFY(!usableSchedule(QStringLiteral("Mon 9-5"), ScheduleUse::Off, &why));
}

void TestSettingsPage::emptyStoredScheduleIsSwitchedOff() {
    {
        QSettings store(iniPath(), QSettings::IniFormat);
        store.setValue(QStringLiteral("schedule/enabled"), true);
        store.setValue(QStringLiteral("schedule/hours"), QString());
    }
    QSettings store(iniPath(), QSettings::IniFormat);
    const LoadedSettings loaded = loadSettings(store);
    QCOMPARE(loaded.settings.throttle.scheduleEnabled, false);
    QCOMPARE(loaded.warnings.size(), 1);
    QVERIFY2(loaded.warnings[0].contains(QLatin1String("names no hours")),
             qPrintable(loaded.warnings[0]));
}

// PoCL's CPU device is no GPU: the settings page has no switch for it (unless asked to offer it,
// as the tests that need a device do).
void TestSettingsPage::openClCpuDeviceIsNotOfferedAsGpu() {
    const auto devices = goblin::compute::listOpenClDevices();
    const auto cpu = devices ? std::find_if(devices->begin(), devices->end(),
                                            [](const auto& device) { return device.type == "cpu"; })
                             : decltype(devices->begin()){};
    if (!devices || cpu == devices->end())
        QSKIP("no OpenCL CPU device here (install pocl-opencl-icd)");
    const QString name = QStringLiteral("gpuEnabled_gpu%1").arg(cpu->index);
    QSettings store(iniPath(), QSettings::IniFormat);
    store.setValue(QStringLiteral("cpu/limit_percent"), 100); // set up: no first run
    AppOptions options{{}, m_dir->path(), true, [] { return HostState{}; }};
    {
        VolunteerApp app(options, store);
        QVERIFY(!app.window().settingsPage()->findChild<QCheckBox*>(name));
        const bool onlyCpus = std::all_of(devices->begin(), devices->end(),
                                          [](const auto& device) { return device.type == "cpu"; });
        const auto* box = app.window().settingsPage()->findChild<QWidget*>(QStringLiteral("gpus"));
        if (onlyCpus)
            QVERIFY(box->findChild<QLabel*>()->text().contains(
                QLatin1String("the OpenCL devices here are CPUs")));
    }
    options.openClCpuDevices = OpenClCpuDevices::Offer;
    VolunteerApp offering(options, store);
    QVERIFY(offering.window().settingsPage()->findChild<QCheckBox*>(name));
}

void TestSettingsPage::corruptValuesAreClampedAndLogged() {
    {
        QSettings store(iniPath(), QSettings::IniFormat);
        store.setValue(QStringLiteral("cpu/limit_percent"), 500);
        store.setValue(QStringLiteral("cpu/cores"), -3);
        store.setValue(QStringLiteral("idle/minutes"), QStringLiteral("soon"));
        store.setValue(QStringLiteral("battery/pause_on_battery"), QStringLiteral("maybe"));
        store.setValue(QStringLiteral("schedule/enabled"), true);
        store.setValue(QStringLiteral("schedule/hours"), QStringLiteral("Funday 25:00-26:00"));
    }
    QSettings store(iniPath(), QSettings::IniFormat);
    const LoadedSettings loaded = loadSettings(store);
    QCOMPARE(loaded.settings.throttle.cpuLimitPercent, 100);
    QCOMPARE(loaded.settings.throttle.cpuCores, 0);
    QCOMPARE(loaded.settings.throttle.idleMinutes, 0);
    QCOMPARE(loaded.settings.throttle.pauseOnBattery, true);
    QCOMPARE(loaded.settings.throttle.scheduleEnabled, false);
    QCOMPARE(loaded.warnings.size(), 5);

    VolunteerApp app(AppOptions{{}, m_dir->path(), true, [] { return HostState{}; }}, store);
    const QString log =
        app.window().findChild<QPlainTextEdit*>(QStringLiteral("eventLog"))->toPlainText();
    QVERIFY2(log.contains(QStringLiteral("cpu/limit_percent = 500 is outside 1-100; using 100")),
             qPrintable(log));
    QCOMPARE(app.window().settingsPage()->findChild<QSlider*>(QStringLiteral("cpuLimit"))->value(),
             100);
}

void TestSettingsPage::scheduleText() {
    auto ranges = parseSchedule(QStringLiteral("Fri-Mon 22:00-06:00; wed 00:00-24:00"));
    QVERIFY(ranges);
    QCOMPARE(ranges->size(), std::size_t{5});
    QCOMPARE((*ranges)[0], (ScheduleRange{4, 22 * 60, 6 * 60}));
    QCOMPARE((*ranges)[3], (ScheduleRange{0, 22 * 60, 6 * 60}));
    QCOMPARE((*ranges)[4], (ScheduleRange{2, 0, 24 * 60}));
    QVERIFY(parseSchedule(QString())->empty());
    QString error;
    QVERIFY(!parseSchedule(QStringLiteral("Mon 24:00-01:00"), &error));
    QVERIFY(!parseSchedule(QStringLiteral("Mon 10:60-11:00")));
    QVERIFY(!error.isEmpty());
}

void TestSettingsPage::startAtLoginWritesTheAutostartEntry() {
    const QByteArray saved = qgetenv("XDG_CONFIG_HOME");
    qputenv("XDG_CONFIG_HOME", m_dir->path().toUtf8());
    const QString entry = m_dir->filePath(QStringLiteral("autostart/goblin-volunteer.desktop"));
    QVERIFY(applyStartAtLogin(true));
    QFile file(entry);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY(file.readAll().contains("Exec=goblin-volunteer --minimized"));
    QVERIFY(applyStartAtLogin(false));
    QVERIFY(!QFile::exists(entry));
    if (saved.isEmpty())
        qunsetenv("XDG_CONFIG_HOME");
    else
        qputenv("XDG_CONFIG_HOME", saved);
}

void TestSettingsPage::corruptNodesAndGpusAreDroppedAndLogged() {
    {
        QSettings store(iniPath(), QSettings::IniFormat);
        store.setValue(QStringLiteral("nodes/size"), 99); // more than kMaxNodes: clamped
        store.setValue(QStringLiteral("nodes/1/url"), QStringLiteral("ws://127.0.0.1:1"));
        store.setValue(QStringLiteral("nodes/1/share"), 400);
        store.setValue(QStringLiteral("nodes/2/url"), QStringLiteral("lab.example.org"));
        store.setValue(QStringLiteral("nodes/3/url"), QStringLiteral("ws://127.0.0.1:1"));
        store.setValue(QStringLiteral("nodes/4/url"), QStringLiteral("ws://127.0.0.1:2"));
        store.setValue(QStringLiteral("nodes/4/share"), QStringLiteral("lots"));
        store.setValue(QStringLiteral("gpus/size"), 3);
        store.setValue(QStringLiteral("gpus/1/device"), QStringLiteral("gpu0"));
        store.setValue(QStringLiteral("gpus/1/enabled"), QStringLiteral("yes please"));
        store.setValue(QStringLiteral("gpus/1/limit_percent"), 0);
        store.setValue(QStringLiteral("gpus/2/device"), QStringLiteral("rm -rf /"));
        store.setValue(QStringLiteral("gpus/3/device"), QStringLiteral("gpu0"));
    }
    QSettings store(iniPath(), QSettings::IniFormat);
    const LoadedSettings loaded = loadSettings(store);
    const auto& nodes = loaded.settings.nodes;
    QCOMPARE(nodes.size(), std::size_t{2});
    QCOMPARE(nodes[0], (AttachedNode{QStringLiteral("ws://127.0.0.1:1"), 100}));
    QCOMPARE(nodes[1], (AttachedNode{QStringLiteral("ws://127.0.0.1:2"), 1}));
    const auto& gpus = loaded.settings.throttle.gpus;
    QCOMPARE(gpus.size(), std::size_t{1});
    QCOMPARE(gpus[0], (GpuLimit{"gpu0", false, 1, {}}));
    const QString warnings = loaded.warnings.join(QLatin1Char('\n'));
    for (const char* expected :
         {"nodes/size = 99 is outside 0-8; using 8", "nodes/1/share = 400 is outside 1-100",
          "nodes/2/url: Not a lab node address: node URL 'lab.example.org'",
          "nodes/3/url = 'ws://127.0.0.1:1' repeats a lab node; dropped",
          "nodes/4/share = 'lots' is not a number", "gpus/1/enabled = 'yes please'",
          "gpus/1/limit_percent = 0 is outside 1-100", "gpus/2/device = 'rm -rf /'",
          "gpus/3/device = 'gpu0' is not a GPU name like gpu0 (or repeats one)"})
        QVERIFY2(warnings.contains(QLatin1String(expected)),
                 qPrintable(expected + ("\n" + warnings)));
}

void TestSettingsPage::nodesAndGpusRoundTrip() {
    VolunteerSettings settings;
    settings.nodes = {{QStringLiteral("ws://a.example.org:1"), 3},
                      {QStringLiteral("ws://b.example.org:2"), 1}};
    settings.throttle.gpus = {{"gpu0", true, 40, "pthread / PoCL"}, {"gpu1", false, 100, {}}};
    {
        QSettings store(iniPath(), QSettings::IniFormat);
        saveSettings(store, settings);
    }
    QSettings store(iniPath(), QSettings::IniFormat);
    const LoadedSettings loaded = loadSettings(store);
    QVERIFY2(loaded.warnings.isEmpty(), qPrintable(loaded.warnings.join(QLatin1Char('\n'))));
    QCOMPARE(loaded.settings.nodes, settings.nodes);
    QCOMPARE(loaded.settings.throttle.gpus, settings.throttle.gpus);
    // Fewer nodes later: the old entries do not linger.
    settings.nodes.pop_back();
    saveSettings(store, settings);
    QCOMPARE(loadSettings(store).settings.nodes, settings.nodes);
    QVERIFY(!store.contains(QStringLiteral("nodes/2/url")));
}

void TestSettingsPage::oneNodeSettingIsCarriedOver() {
    QSettings store(iniPath(), QSettings::IniFormat);
    store.setValue(QStringLiteral("node/url"), QStringLiteral("ws://127.0.0.1:7000"));
    const LoadedSettings loaded = loadSettings(store);
    QCOMPARE(loaded.settings.nodes,
             (std::vector<AttachedNode>{{QStringLiteral("ws://127.0.0.1:7000"), 1}}));
    saveSettings(store, loaded.settings);
    QVERIFY(!store.contains(QStringLiteral("node/url")));
    QCOMPARE(store.value(QStringLiteral("nodes/1/url")).toString(),
             QStringLiteral("ws://127.0.0.1:7000"));
}

void TestSettingsPage::coresAreCountedInEnglish() {
    QCOMPARE(coreCount(1), QStringLiteral("1 core"));
    QCOMPARE(coreCount(2), QStringLiteral("2 cores"));
    QCOMPARE(coreCount(0), QStringLiteral("0 cores"));
    SettingsPage page(1);
    auto* cores = page.findChild<QSpinBox*>(QStringLiteral("cpuCores"));
    QCOMPARE(cores->specialValueText(), QStringLiteral("the one core"));
    VolunteerSettings settings;
    settings.throttle.cpuCores = 1;
    page.setSettings(settings);
    QCOMPARE(cores->text(), QStringLiteral("1 core"));
    SettingsPage wide(8);
    wide.setSettings(settings);
    auto* eight = wide.findChild<QSpinBox*>(QStringLiteral("cpuCores"));
    QCOMPARE(eight->text(), QStringLiteral("1 core"));
    eight->setValue(3);
    QCOMPARE(eight->text(), QStringLiteral("3 cores"));
    FirstRunPage first(1);
    QCOMPARE(first.findChild<QSpinBox*>(QStringLiteral("firstRunCores"))->text(),
             QStringLiteral("1 of 1 core"));
}

QTEST_MAIN(TestSettingsPage)
#include "test_settings_page.moc"
