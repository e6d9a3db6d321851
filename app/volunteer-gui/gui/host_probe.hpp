// Linux host probes for the throttle: user idle time (logind's IdleHint over D-Bus, else GNOME's
// or the freedesktop ScreenSaver's idle time), battery (UPower's display device over D-Bus, else
// /sys/class/power_supply) and memory use (/proc/meminfo). GUI thread; D-Bus calls are short.
#pragma once

#include <QString>

#include <cstdint>

#include "host_state.hpp"

namespace goblin::volunteer {

class HostProbe {
public:
    HostProbe();
    HostState sample();
    // Which idle source works, or why none does, for the window.
    QString idleSource() const { return m_idleSource; }
    QString batterySource() const { return m_batterySource; }
    void setNetworkBytesToday(std::int64_t bytes) { m_networkBytesToday = bytes; }

private:
    std::optional<double> probeIdle();
    void probeBattery(HostState& host);

    QString m_idleSource;
    QString m_batterySource;
    std::int64_t m_networkBytesToday = 0;
};

// Reads /sys/class/power_supply under `root` (a test may point elsewhere): on battery when no
// mains supply is online and a battery discharges; the level of the first battery.
void readPowerSupply(const QString& root, HostState& host);
double memoryUsedPercent();

} // namespace goblin::volunteer
