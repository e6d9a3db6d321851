#include "volunteer_app.hpp"

#include "gpu_settings.hpp"

#include <QApplication>
#include <QTabWidget>

#include <algorithm>

#include "device_setup.hpp"
#include "goblin/compute/opencl_devices.hpp"
#include "gui_resources.hpp"
#include "main_window.hpp"
#include "nodes_page.hpp"
#include "status_page.hpp"
#include "tray_host.hpp"

namespace goblin::volunteer {

namespace {
constexpr double kOneHour = 3600;
constexpr std::int64_t kMiB = 1024 * 1024;

QString fromView(std::string_view text) {
    return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

std::vector<bool> enabledGpus(const ThrottleSettings& settings) {
    std::vector<bool> enabled;
    for (const GpuLimit& gpu : settings.gpus)
        enabled.push_back(gpu.enabled);
    return enabled;
}
} // namespace

VolunteerApp::VolunteerApp(const AppOptions& options, QSettings& store, QObject* parent)
    : QObject(parent), m_options(options), m_store(store),
      m_throttle(options.sampler ? options.sampler
                                 : HostSampler([this] { return m_probe.sample(); }),
                 systemThrottleClock()),
      m_tally(store) {
    initGuiResources();
    const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    m_window = std::make_unique<MainWindow>(hardware);
    m_window->setWindowIcon(stateIcon(VolunteerState::Computing));
    m_firstRun = isFirstRun(m_store);
    LoadedSettings loaded = loadSettings(m_store);
    for (const QString& warning : loaded.warnings)
        log(warning);
    m_settings = loaded.settings;
    listGpus();
    if (m_firstRun) { // --node only fills in the page's answer: the volunteer still confirms
        m_window->firstRunPage()->setNodeUrl(m_options.nodeUrl);
        m_window->showFirstRun();
    } else if (!m_options.nodeUrl.isEmpty()) {
        if (const auto problem = nodeUrlProblem(m_options.nodeUrl))
            m_linkError = *problem;
        else if (std::none_of(
                     m_settings.nodes.begin(), m_settings.nodes.end(),
                     [&](const AttachedNode& node) { return node.url == m_options.nodeUrl; }))
            m_settings.nodes.push_back(AttachedNode{m_options.nodeUrl.trimmed(), 1});
    }
    if (!m_linkError.isEmpty()) {
        log(m_linkError);
        m_window->nodesPage()->setMessage(m_linkError);
    }
    m_window->settingsPage()->setSettings(m_settings);
    m_window->nodesPage()->setNodes(m_settings.nodes);
    m_window->nodesPage()->setCaFile(m_settings.caFile);
    m_throttle.setSettings(m_settings.throttle);

    connect(&m_bridge, &EngineBridge::statusChanged, this, &VolunteerApp::onStatus);
    connect(&m_bridge, &EngineBridge::nodesChanged, this, &VolunteerApp::onNodes);
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
    NodesPage* nodes = m_window->nodesPage();
    connect(nodes, &NodesPage::nodeAdded, this, &VolunteerApp::addNode);
    connect(nodes, &NodesPage::nodeRemoved, this, &VolunteerApp::removeNode);
    connect(nodes, &NodesPage::shareChanged, this, &VolunteerApp::setShare);
    connect(nodes, &NodesPage::caFileChanged, this, [this](const QString& file) {
        m_settings.caFile = file;
        m_linkError.clear();
        m_window->nodesPage()->setMessage({});
        restartEngines(QStringLiteral("CA file for wss:// nodes changed: reconnecting"));
    });
    connect(m_window.get(), &MainWindow::pauseToggled, this, &VolunteerApp::togglePause);
    connect(m_window->firstRunPage(), &FirstRunPage::completed, this,
            &VolunteerApp::completeFirstRun);
    setupTray();
    onDecision(m_throttle.decision());
    if (!m_firstRun) {
        restartEngines({});
        return;
    }
    log(QStringLiteral("first run: choose a lab node and what to lend; nothing computes until "
                       "you press Start"));
    m_status.link = LinkState::Stopped;
    m_window->showNormal(); // even --minimized: only this page can make the app do anything
    refreshView();
}

// The first run's answers replace the defaults (and are saved, so the page never shows again);
// only then do the engines start.
void VolunteerApp::completeFirstRun(const FirstRunChoice& choice) {
    if (!m_firstRun || firstRunProblem(choice))
        return;
    m_firstRun = false;
    const VolunteerSettings chosen = firstRunSettings(choice);
    m_settings.nodes = chosen.nodes;
    m_settings.caFile = chosen.caFile;
    m_settings.throttle.cpuCores = chosen.throttle.cpuCores;
    m_settings.throttle.idleMinutes = chosen.throttle.idleMinutes;
    m_window->settingsPage()->setSettings(m_settings);
    m_window->nodesPage()->setNodes(m_settings.nodes);
    m_window->nodesPage()->setCaFile(m_settings.caFile);
    m_throttle.setSettings(m_settings.throttle);
    m_window->showTabs();
    restartEngines(
        QStringLiteral("first run done: lending %1 %2; attaching to %3")
            .arg(coreCount(m_settings.throttle.cpuCores))
            .arg(m_settings.throttle.idleMinutes > 0
                     ? QStringLiteral("after %1 min idle").arg(m_settings.throttle.idleMinutes)
                     : QStringLiteral("always"))
            .arg(m_settings.nodes.front().url));
}

VolunteerApp::~VolunteerApp() {
    m_bridge.stop();
}

// The OpenCL devices, listed once on the GUI thread before any engine runs (pointing the
// driver's program cache at our folder first, while no other thread reads the environment).
void VolunteerApp::listGpus() {
    (void)compute::prepareOpenClCache(defaultCacheDir() / "opencl");
    auto devices = m_options.listDevices ? m_options.listDevices() : compute::listOpenClDevices();
    if (!devices) {
        m_window->settingsPage()->setGpuDevices({},
                                                QString::fromStdString(devices.error().message));
        return;
    }
    const auto gpus = gpuDevices(*devices, m_options.openClCpuDevices);
    std::vector<ListedGpu> listed;
    for (const auto& device : gpus) {
        const QString id = QStringLiteral("gpu%1").arg(device.index);
        m_gpus.push_back(
            GpuDevice{id, QStringLiteral("%1 (%2)").arg(QString::fromStdString(device.name),
                                                        QString::fromStdString(device.type))});
        listed.push_back(ListedGpu{id.toStdString(), device.name + " / " + device.vendor});
    }
    m_settings.throttle.gpus = matchGpuSettings(m_settings.throttle.gpus, listed);
    const bool onlyCpus = gpus.empty() && !devices->empty();
    m_window->settingsPage()->setGpuDevices(
        m_gpus, onlyCpus ? QStringLiteral("the OpenCL devices here are CPUs (e.g. PoCL), not GPUs; "
                                          "the CPU already computes on these cores")
                         : QString());
}

void VolunteerApp::setupTray() {
    m_tray = std::make_unique<TrayHost>(m_options.trayAvailable, *m_window);
    TrayIcon* icon = &m_tray->icon();
    connect(icon, &TrayIcon::pauseToggled, this, &VolunteerApp::togglePause);
    connect(icon, &TrayIcon::pauseHourRequested, this, &VolunteerApp::pauseForAnHour);
    connect(icon, &TrayIcon::finishThenPauseRequested, this, &VolunteerApp::finishThenPause);
    connect(icon, &TrayIcon::openWindowRequested, this, &VolunteerApp::raiseWindow);
    connect(icon, &TrayIcon::quitRequested, qApp, &QApplication::quit);
    connect(m_tray.get(), &TrayHost::logLine, this, &VolunteerApp::log);
    connect(m_tray.get(), &TrayHost::hostReturned, this, &VolunteerApp::refreshView);
    m_tray->start(m_options.minimized);
}

TrayIcon* VolunteerApp::tray() {
    return m_tray ? m_tray->shownIcon() : nullptr;
}

void VolunteerApp::raiseWindow() {
    m_window->showNormal();
    m_window->raise();
    m_window->activateWindow();
}

void VolunteerApp::checkTrayHost() {
    m_tray->check();
}

void VolunteerApp::log(const QString& line) {
    m_window->appendLog(line);
}

void VolunteerApp::applySettings(const VolunteerSettings& settings) {
    const bool memoryChanged = settings.throttle.memoryCapMiB != m_settings.throttle.memoryCapMiB;
    const bool devicesChanged = enabledGpus(settings.throttle) != enabledGpus(m_settings.throttle);
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
    // The GPU-time limit applies live through the plan; which devices compute is fixed when an
    // engine starts (it advertises them in its hello), so switching one restarts the engines.
    if (devicesChanged)
        restartEngines(QStringLiteral("devices changed to %1: reconnecting to offer them")
                           .arg(deviceChoice()));
    else if (memoryChanged)
        restartEngines(QStringLiteral("memory to lend changed: reconnecting to offer it"));
    else
        m_bridge.setPlan(currentPlan(m_draining));
}

void VolunteerApp::addNode(const QString& url) {
    if (const auto problem = nodeUrlProblem(url)) {
        m_window->nodesPage()->setMessage(*problem);
        return log(*problem);
    }
    m_linkError.clear();
    m_window->nodesPage()->setMessage({});
    m_settings.nodes.push_back(AttachedNode{url.trimmed(), 1});
    m_window->nodesPage()->setNodes(m_settings.nodes);
    restartEngines(QStringLiteral("attaching to %1").arg(url.trimmed()));
}

void VolunteerApp::removeNode(const QString& url) {
    auto& nodes = m_settings.nodes;
    nodes.erase(std::remove_if(nodes.begin(), nodes.end(),
                               [&](const AttachedNode& node) { return node.url == url; }),
                nodes.end());
    m_linkError.clear();
    m_window->nodesPage()->setMessage({});
    m_window->nodesPage()->setNodes(nodes);
    restartEngines(QStringLiteral("detached from %1").arg(url));
}

void VolunteerApp::setShare(const QString& url, int share) {
    for (AttachedNode& node : m_settings.nodes)
        if (node.url == url)
            node.share = std::clamp(share, 1, kMaxShare);
    saveSettings(m_store, m_settings);
    m_bridge.setShares(sharePercents(m_settings.nodes)); // live: only the duty split changes
}

// Every engine restarts on a change of the node list, the devices or the memory offered: each
// engine's share of memory and its devices are fixed in its hello. Tasks in hand go back to
// their nodes, which re-queue them.
void VolunteerApp::restartEngines(const QString& why) {
    saveSettings(m_store, m_settings);
    m_bridge.stop();
    m_status = EngineStatus{};
    m_nodes.clear();
    m_tally.restart();
    if (!why.isEmpty())
        log(why);
    if (m_settings.nodes.empty()) {
        m_status.link = LinkState::Stopped;
        log(QStringLiteral("not attached to any lab node"));
        return refreshView();
    }
    BridgeConfig config;
    const std::vector<int> percents = sharePercents(m_settings.nodes);
    for (std::size_t i = 0; i < m_settings.nodes.size(); ++i)
        config.nodes.push_back(BridgeNode{m_settings.nodes[i].url, percents[i]});
    config.caFile = m_settings.caFile;
    config.configDir = m_options.configDir;
    const int cap = m_settings.throttle.memoryCapMiB;
    config.memoryBytes = cap > 0 ? cap * kMiB : 0;
    config.devices = deviceChoice();
    config.protocolVersion = m_options.protocolVersion;
    config.releaseAfterPauseMs = m_options.releaseAfterPauseMs;
    m_bridge.setPlan(currentPlan(m_draining));
    m_bridge.start(config);
    refreshView();
}

// The first GPU switched on (of those listed): setUpDevices computes on one OpenCL device.
std::optional<std::size_t> VolunteerApp::gpuInUse() const {
    const auto& gpus = m_settings.throttle.gpus;
    for (std::size_t i = 0; i < gpus.size(); ++i) {
        const QString id = QString::fromStdString(gpus[i].device);
        const bool listed = std::any_of(m_gpus.begin(), m_gpus.end(),
                                        [&](const GpuDevice& device) { return device.id == id; });
        if (gpus[i].enabled && listed)
            return i;
    }
    return std::nullopt;
}

QString VolunteerApp::deviceChoice() const {
    const auto gpu = gpuInUse();
    if (!gpu)
        return QStringLiteral("cpu");
    return QStringLiteral("cpu,%1").arg(
        QString::fromStdString(m_settings.throttle.gpus[*gpu].device));
}

ComputePlan VolunteerApp::currentPlan(bool draining) const {
    return planFor(m_throttle.decision(), draining, gpuInUse());
}

void VolunteerApp::onDecision(const ThrottleDecision& decision) {
    m_bridge.setPlan(currentPlan(m_draining));
    log(QStringLiteral("throttle: %1 (%2 thread(s), %3 % CPU time)")
            .arg(fromView(describe(decision.reason)))
            .arg(decision.cpuThreads)
            .arg(decision.cpuDutyPercent));
    refreshView();
}

void VolunteerApp::onNodes(const std::vector<NodeStatus>& nodes) {
    m_nodes = nodes;
    m_window->nodesPage()->showStatus(nodes);
}

void VolunteerApp::onStatus(const EngineStatus& status) {
    m_status = status;
    if (m_tally.count(status.counters))
        m_probe.setNetworkBytesToday(m_tally.bytesToday());
    if (m_draining && !status.running) {
        m_draining = false;
        log(QStringLiteral("the current task is done: paused"));
        m_throttle.pauseUntilResumed();
        m_bridge.setPlan(currentPlan(false));
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
    log(QStringLiteral("finishing the current task on every lab node, then pausing"));
    m_draining = true;
    m_bridge.setPlan(currentPlan(true));
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
        m_tray->icon().showState(current, tooltip);
    m_window->showState(current);
    StatusView view;
    view.state = tooltip.section(QStringLiteral(" — "), 1);
    const auto connected =
        std::count_if(m_nodes.begin(), m_nodes.end(), [](const NodeStatus& node) {
            return node.engine.link == LinkState::Connected;
        });
    if (m_settings.nodes.empty())
        view.link = QStringLiteral("Not attached to a lab node: add one on the Lab nodes page.");
    else if (m_settings.nodes.size() == 1)
        view.link = QStringLiteral("%1: %2").arg(
            m_settings.nodes.front().url,
            m_nodes.empty() ? linkText(m_status) : nodeLinkText(m_nodes.front().engine));
    else
        view.link = QStringLiteral("%1 lab nodes, %2 connected (details on the Lab nodes page)")
                        .arg(m_settings.nodes.size())
                        .arg(connected);
    view.engine = m_status;
    view.nodes = m_nodes;
    view.totals = m_tally.totals();
    view.idleSource = m_probe.idleSource();
    view.batterySource = m_probe.batterySource();
    m_window->statusPage()->display(view);
}

} // namespace goblin::volunteer
