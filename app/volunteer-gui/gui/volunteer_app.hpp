// The desktop app's composition (GUI thread): settings store, host probe, throttle controller,
// engine bridge (one engine per lab node), window, tray (TrayHost) and the day's tallies
// (DailyTally), wired together. With no settings saved yet it opens on the first-run page and
// starts no engine until that page is completed.
#pragma once

#include <QObject>
#include <QSettings>

#include <functional>
#include <memory>
#include <optional>

#include "daily_tally.hpp"
#include "device_choice.hpp"
#include "engine_bridge.hpp"
#include "first_run_page.hpp"
#include "host_probe.hpp"
#include "settings_page.hpp"
#include "settings_store.hpp"
#include "throttle_controller.hpp"
#include "volunteer_state.hpp"

namespace goblin::volunteer {

class MainWindow;
class TrayHost;
class TrayIcon;

struct AppOptions {
    QString nodeUrl;   // attached (and kept) when set and not attached yet
    QString configDir; // where the identity is kept
    bool minimized = false;
    HostSampler sampler; // tests inject one; empty: the Linux host probe
    // Whether a tray host exists; empty: QSystemTrayIcon::isSystemTrayAvailable.
    std::function<bool()> trayAvailable = {};
    int protocolVersion = net::kProtocolVersion; // what the engines offer (tests offer others)
    int releaseAfterPauseMs = 30'000;
    // Lists the OpenCL devices; empty: in this process. The app runs `goblin-volunteer
    // --list-devices-tsv` (listDevicesInChild), so the driver never loads into the GUI process.
    std::function<Expected<std::vector<compute::OpenClDeviceInfo>>()> listDevices = {};
    // OpenCL CPU devices (PoCL) are no GPUs; tests on machines with only PoCL offer them.
    OpenClCpuDevices openClCpuDevices = OpenClCpuDevices::Hide;
};

class VolunteerApp : public QObject {
    Q_OBJECT
public:
    VolunteerApp(const AppOptions& options, QSettings& store, QObject* parent = nullptr);
    ~VolunteerApp() override;
    MainWindow& window() { return *m_window; }
    TrayIcon* tray();
    ThrottleController& throttle() { return m_throttle; }
    EngineBridge& bridge() { return m_bridge; }
    const VolunteerSettings& settings() const { return m_settings; }
    const std::vector<NodeStatus>& nodeStatuses() const { return m_nodes; }
    VolunteerState state() const;
    void refreshView();
    // The tray menu's commands.
    void togglePause();
    void pauseForAnHour();
    void finishThenPause();
    // Shows the window on top (the tray's "Open window", a second launch).
    void raiseWindow();
    // Shows the window when the tray host went away (also run every 5 s).
    void checkTrayHost();
    // The node edits of the lab nodes page.
    void addNode(const QString& url);
    void removeNode(const QString& url);
    void setShare(const QString& url, int share);
    // The first-run page is up: nothing computes until it is completed.
    bool firstRunPending() const { return m_firstRun; }
    void completeFirstRun(const FirstRunChoice& choice);

private:
    void log(const QString& line);
    void listGpus();
    void applySettings(const VolunteerSettings& settings);
    void restartEngines(const QString& why);
    void onNodes(const std::vector<NodeStatus>& nodes);
    void onStatus(const EngineStatus& status);
    void onDecision(const ThrottleDecision& decision);
    ComputePlan currentPlan(bool draining) const;
    std::optional<std::size_t> gpuInUse() const;
    QString deviceChoice() const;
    void setupTray();

    AppOptions m_options;
    QSettings& m_store;
    VolunteerSettings m_settings;
    std::vector<GpuDevice> m_gpus; // the OpenCL devices listed at start
    HostProbe m_probe;
    ThrottleController m_throttle;
    EngineBridge m_bridge;
    std::unique_ptr<MainWindow> m_window;
    std::unique_ptr<TrayHost> m_tray;
    EngineStatus m_status;
    std::vector<NodeStatus> m_nodes;
    QString m_linkError;
    bool m_draining = false;
    bool m_firstRun = false;
    DailyTally m_tally;
};

} // namespace goblin::volunteer
