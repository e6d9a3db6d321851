// The desktop app's composition (GUI thread): settings store, host probe, throttle controller,
// engine bridge, window and tray, wired together. Keeps the day's tallies (tasks, network bytes).
#pragma once

#include <QObject>
#include <QSettings>
#include <QTimer>

#include <memory>

#include "engine_bridge.hpp"
#include "host_probe.hpp"
#include "settings_store.hpp"
#include "throttle_controller.hpp"
#include "volunteer_state.hpp"

namespace goblin::volunteer {

class MainWindow;
class TrayIcon;

struct AppOptions {
    QString nodeUrl;   // overrides the stored node when set
    QString configDir; // where the identity is kept
    bool minimized = false;
    HostSampler sampler; // tests inject one; empty: the Linux host probe
};

class VolunteerApp : public QObject {
    Q_OBJECT
public:
    VolunteerApp(const AppOptions& options, QSettings& store, QObject* parent = nullptr);
    ~VolunteerApp() override;
    MainWindow& window() { return *m_window; }
    TrayIcon* tray() { return m_tray.get(); }
    ThrottleController& throttle() { return m_throttle; }
    EngineBridge& bridge() { return m_bridge; }
    VolunteerState state() const;
    void refreshView();
    // The tray menu's commands.
    void togglePause();
    void pauseForAnHour();
    void finishThenPause();

private:
    void log(const QString& line);
    void applySettings(const VolunteerSettings& settings);
    void attach(const QString& url);
    void onStatus(const EngineStatus& status);
    void onDecision(const ThrottleDecision& decision);
    void tally(const EngineStatus& status);
    void setupTray();
    void watchTrayHost();

    AppOptions m_options;
    QSettings& m_store;
    VolunteerSettings m_settings;
    HostProbe m_probe;
    ThrottleController m_throttle;
    EngineBridge m_bridge;
    std::unique_ptr<MainWindow> m_window;
    std::unique_ptr<TrayIcon> m_tray;
    EngineStatus m_status;
    QString m_linkError;
    bool m_draining = false;
    bool m_trayLost = false;
    QTimer m_trayWatch;
    std::int64_t m_seenTasks = 0, m_seenBytes = 0;
};

} // namespace goblin::volunteer
