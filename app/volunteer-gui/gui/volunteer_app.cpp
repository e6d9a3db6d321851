#include "volunteer_app.hpp"

#include <QApplication>
#include <QDate>
#include <QTabWidget>

#include "gui_resources.hpp"
#include "main_window.hpp"
#include "nodes_page.hpp"
#include "settings_page.hpp"
#include "status_page.hpp"
#include "tray_icon.hpp"

namespace goblin::volunteer {

namespace {
constexpr double kOneHour = 3600;
constexpr std::int64_t kMiB = 1024 * 1024;
} // namespace

VolunteerApp::VolunteerApp(const AppOptions& options, QSettings& store, QObject* parent)
    : QObject(parent), m_options(options), m_store(store),
      m_throttle(options.sampler ? options.sampler
                                 : HostSampler([this] { return m_probe.sample(); }),
                 systemThrottleClock()) {
    initGuiResources();
    const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    m_window = std::make_unique<MainWindow>(hardware);
    m_window->setWindowIcon(stateIcon(VolunteerState::Computing));
    LoadedSettings loaded = loadSettings(m_store);
    for (const QString& warning : loaded.warnings)
        log(warning);
    m_settings = loaded.settings;
    if (!m_options.nodeUrl.isEmpty())
        m_settings.nodeUrl = m_options.nodeUrl;
    m_window->settingsPage()->setSettings(m_settings);
    m_throttle.setSettings(m_settings.throttle);

    connect(&m_bridge, &EngineBridge::statusChanged, this, &VolunteerApp::onStatus);
    connect(&m_bridge, &EngineBridge::logLine, this, &VolunteerApp::log);
    connect(&m_bridge, &EngineBridge::linkError, this, [this](const QString& message) {
        m_linkError = message;
        log(message);
        m_window->nodesPage()->setMessage(message);
        refreshView();
    });
    connect(&m_throttle, &ThrottleController::decisionChanged, this, &VolunteerApp::onDecision);
    connect(m_window->settingsPage(), &SettingsPage::settingsEdited, this,
            &VolunteerApp::applySettings);
    connect(m_window->nodesPage(), &NodesPage::nodeAdded, this, &VolunteerApp::attach);
    connect(m_window->nodesPage(), &NodesPage::nodeRemoved, this, [this] { attach({}); });
    setupTray();
    onDecision(m_throttle.decision());
    attach(m_settings.nodeUrl);
}

VolunteerApp::~VolunteerApp() {
    m_bridge.stop();
}

void VolunteerApp::setupTray() {
    if (!QSystemTrayIcon::isSystemTrayAvailable()) {
        log(QStringLiteral(
            "no system tray is available: the window stays open, and closing it quits"));
        QApplication::setQuitOnLastWindowClosed(true);
        m_window->show();
        return;
    }
    QApplication::setQuitOnLastWindowClosed(false);
    m_tray = std::make_unique<TrayIcon>();
    connect(m_tray.get(), &TrayIcon::pauseToggled, this, &VolunteerApp::togglePause);
    connect(m_tray.get(), &TrayIcon::pauseHourRequested, this, &VolunteerApp::pauseForAnHour);
    connect(m_tray.get(), &TrayIcon::finishThenPauseRequested, this,
            &VolunteerApp::finishThenPause);
    connect(m_tray.get(), &TrayIcon::openWindowRequested, this, [this] {
        m_window->showNormal();
        m_window->raise();
        m_window->activateWindow();
    });
    connect(m_tray.get(), &TrayIcon::quitRequested, qApp, &QApplication::quit);
    m_tray->icon().show();
    if (!m_options.minimized)
        m_window->show();
    m_trayWatch.setInterval(5000);
    connect(&m_trayWatch, &QTimer::timeout, this, &VolunteerApp::watchTrayHost);
    m_trayWatch.start();
}

// A tray host can go away (a panel restarts or is removed): then the window is the only way in,
// so it is shown and closing it quits; when the host returns, the icon does too.
void VolunteerApp::watchTrayHost() {
    const bool available = QSystemTrayIcon::isSystemTrayAvailable();
    if (available == !m_trayLost)
        return;
    m_trayLost = !available;
    QApplication::setQuitOnLastWindowClosed(m_trayLost);
    if (m_trayLost) {
        log(QStringLiteral("the system tray went away: showing the window (closing it quits)"));
        m_window->show();
        return;
    }
    log(QStringLiteral("the system tray is back"));
    m_tray->icon().show();
}

void VolunteerApp::log(const QString& line) {
    m_window->appendLog(line);
}

void VolunteerApp::applySettings(const VolunteerSettings& settings) {
    const bool memoryChanged = settings.throttle.memoryCapMiB != m_settings.throttle.memoryCapMiB;
    if (settings.startAtLogin != m_settings.startAtLogin) {
        QString error;
        if (!applyStartAtLogin(settings.startAtLogin, &error))
            log(error);
    }
    m_settings.throttle = settings.throttle;
    m_settings.scheduleText = settings.scheduleText;
    m_settings.startAtLogin = settings.startAtLogin;
    saveSettings(m_store, m_settings);
    m_throttle.setSettings(m_settings.throttle);
    if (memoryChanged && m_bridge.running()) {
        log(QStringLiteral("memory to lend changed: reconnecting to offer it"));
        attach(m_settings.nodeUrl);
    }
}

void VolunteerApp::attach(const QString& url) {
    m_linkError.clear();
    m_window->nodesPage()->setMessage({});
    m_settings.nodeUrl = url;
    saveSettings(m_store, m_settings);
    m_bridge.stop();
    m_status = EngineStatus{};
    m_seenTasks = m_seenBytes = 0;
    if (url.isEmpty()) {
        m_status.link = LinkState::Stopped;
        log(QStringLiteral("not attached to any lab node"));
        return refreshView();
    }
    BridgeConfig config;
    config.nodeUrl = url;
    config.configDir = m_options.configDir;
    const int cap = m_settings.throttle.memoryCapMiB;
    config.memoryBytes = cap > 0 ? cap * kMiB : 0;
    log(QStringLiteral("attaching to %1").arg(url));
    m_bridge.start(config);
    refreshView();
}

void VolunteerApp::onDecision(const ThrottleDecision& decision) {
    m_bridge.setPlan(planFor(decision, m_draining));
    log(QStringLiteral("throttle: %1 (%2 thread(s), %3 % CPU time)")
            .arg(QString::fromUtf8(describe(decision.reason).data(),
                                   static_cast<qsizetype>(describe(decision.reason).size())))
            .arg(decision.cpuThreads)
            .arg(decision.cpuDutyPercent));
    refreshView();
}

void VolunteerApp::onStatus(const EngineStatus& status) {
    m_status = status;
    tally(status);
    if (m_draining && !status.running) {
        m_draining = false;
        log(QStringLiteral("the current task is done: paused"));
        m_throttle.pauseUntilResumed();
        m_bridge.setPlan(planFor(m_throttle.decision(), false));
    }
    refreshView();
}

void VolunteerApp::togglePause() {
    m_draining = false;
    if (m_throttle.userPaused()) {
        log(QStringLiteral("resumed"));
        return m_throttle.resume();
    }
    log(QStringLiteral("paused"));
    m_throttle.pauseUntilResumed();
}

void VolunteerApp::pauseForAnHour() {
    m_draining = false;
    log(QStringLiteral("paused for one hour"));
    m_throttle.pauseFor(kOneHour);
}

void VolunteerApp::finishThenPause() {
    log(QStringLiteral("finishing the current task, then pausing"));
    m_draining = true;
    m_bridge.setPlan(planFor(m_throttle.decision(), true));
}

void VolunteerApp::tally(const EngineStatus& status) {
    const QString today = QDate::currentDate().toString(Qt::ISODate);
    if (m_store.value(QStringLiteral("tally/day")).toString() != today) {
        m_store.setValue(QStringLiteral("tally/day"), today);
        m_store.setValue(QStringLiteral("tally/tasks_today"), 0);
        m_store.setValue(QStringLiteral("tally/bytes_today"), 0);
    }
    const std::int64_t tasks = status.counters.computed - m_seenTasks;
    const std::int64_t bytes =
        status.counters.bytesReceived + status.counters.bytesSent - m_seenBytes;
    m_seenTasks = status.counters.computed;
    m_seenBytes += bytes;
    if (tasks == 0 && bytes == 0)
        return;
    for (const auto& [key, delta] : {std::pair{QStringLiteral("tally/tasks_today"), tasks},
                                     std::pair{QStringLiteral("tally/tasks_total"), tasks},
                                     std::pair{QStringLiteral("tally/bytes_today"), bytes}})
        m_store.setValue(key, m_store.value(key).toLongLong() + delta);
    m_probe.setNetworkBytesToday(m_store.value(QStringLiteral("tally/bytes_today")).toLongLong());
}

VolunteerState VolunteerApp::state() const {
    return volunteerState(m_throttle.decision(), m_status, !m_linkError.isEmpty());
}

void VolunteerApp::refreshView() {
    const VolunteerState current = state();
    EngineStatus shown = m_status;
    if (!m_linkError.isEmpty())
        shown.lastError = m_linkError.toStdString();
    const QString tooltip = stateTooltip(current, m_throttle.decision(), shown);
    if (m_tray)
        m_tray->showState(current, tooltip);
    StatusView view;
    view.state = tooltip.section(QStringLiteral(" — "), 1);
    view.link = m_settings.nodeUrl.isEmpty()
                    ? QStringLiteral("Not attached to a lab node: add one on the Lab nodes page.")
                    : QStringLiteral("%1: %2").arg(m_settings.nodeUrl, linkText(m_status));
    view.engine = m_status;
    view.tasksToday = m_store.value(QStringLiteral("tally/tasks_today")).toLongLong();
    view.tasksTotal = m_store.value(QStringLiteral("tally/tasks_total")).toLongLong();
    view.idleSource = m_probe.idleSource();
    view.batterySource = m_probe.batterySource();
    m_window->statusPage()->display(view);
    QString connection = m_linkError.isEmpty() ? linkText(m_status) : m_linkError;
    if (m_linkError.isEmpty() && m_status.link == LinkState::Disconnected &&
        !m_status.lastError.empty())
        connection += QStringLiteral(" (%1)").arg(QString::fromStdString(m_status.lastError));
    m_window->nodesPage()->setNode(m_settings.nodeUrl, connection);
}

} // namespace goblin::volunteer
