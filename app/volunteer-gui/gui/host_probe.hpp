// Linux host probes for the throttle: user idle time (the X11 screensaver extension on an X11
// session, else logind's IdleHint over D-Bus, else GNOME's or the freedesktop ScreenSaver's idle
// time), battery (UPower's display device over D-Bus, else /sys/class/power_supply) and memory use
// (/proc/meminfo, host_readings.hpp). GUI thread; D-Bus calls are short.
#pragma once

#include <QDBusConnection>
#include <QString>

#include <cstdint>
#include <memory>
#include <optional>

#include "host_readings.hpp"
#include "host_state.hpp"

namespace goblin::volunteer {

class X11IdleProbe;

// Where the probes look; tests point them at a private bus, an Xvfb display or a fake sysfs.
struct HostProbeSources {
    QDBusConnection systemBus = QDBusConnection::systemBus();   // logind, UPower
    QDBusConnection sessionBus = QDBusConnection::sessionBus(); // desktop idle monitors
    // The X display for idle time; unset: $DISPLAY, unless the session is Wayland (where X11 sees
    // only the input of X programs); an empty string: no X11.
    std::optional<QString> x11Display;
    QString powerSupplyRoot = QStringLiteral("/sys/class/power_supply");
};

class HostProbe {
public:
    explicit HostProbe(HostProbeSources sources = {});
    ~HostProbe();
    HostState sample();
    // Which idle source works, or why none does, for the window.
    QString idleSource() const { return m_idleSource; }
    QString batterySource() const { return m_batterySource; }
    void setNetworkBytesToday(std::int64_t bytes) { m_networkBytesToday = bytes; }

private:
    std::optional<double> probeIdle();
    void probeBattery(HostState& host);

    void openX11();

    HostProbeSources m_sources;
    std::unique_ptr<X11IdleProbe> m_x11;
    QString m_x11Problem; // why X11 idle time is not used
    QString m_idleSource;
    QString m_batterySource;
    std::int64_t m_networkBytesToday = 0;
};

} // namespace goblin::volunteer
