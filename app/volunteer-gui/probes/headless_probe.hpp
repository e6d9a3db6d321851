// The headless volunteer's host probe (its io thread): user idle time from the X11 screensaver
// extension when the build has X11 and a display is given, else from the terminals of logged-in
// users (tty_idle.hpp); battery and memory use from host_readings.hpp. No Qt, no D-Bus.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "host_state.hpp"
#include "tty_idle.hpp"

namespace goblin::volunteer {

class X11IdleProbe;

// Where the probes look; tests point them at a fake utmp, /dev, sysfs and meminfo.
struct HeadlessProbeSources {
    // The X display for idle time; unset: $DISPLAY; an empty string: no X11.
    std::optional<std::string> x11Display;
    TtyIdleSources tty;
    std::filesystem::path powerSupplyRoot = "/sys/class/power_supply";
    std::filesystem::path meminfo = "/proc/meminfo";
};

class HeadlessHostProbe {
public:
    explicit HeadlessHostProbe(HeadlessProbeSources sources = {});
    ~HeadlessHostProbe();
    HeadlessHostProbe(const HeadlessHostProbe&) = delete;
    HeadlessHostProbe& operator=(const HeadlessHostProbe&) = delete;

    HostState sample();
    // Which idle source answered last, or why none did ("not probed yet" before the first sample).
    const std::string& idleSource() const { return m_idleSource; }

private:
    std::optional<double> probeIdle();

    HeadlessProbeSources m_sources;
    std::unique_ptr<X11IdleProbe> m_x11;
    std::string m_idleSource = "not probed yet";
};

} // namespace goblin::volunteer
