// Host readings every front end shares, from files only (no Qt, no D-Bus): the battery from
// /sys/class/power_supply and memory use from /proc/meminfo. Plain functions; any thread.
#pragma once

#include <filesystem>

#include "host_state.hpp"

namespace goblin::volunteer {

// Reads /sys/class/power_supply under `root` (a test may point elsewhere): on battery when no
// mains supply is online and a battery discharges; the level of the first battery by name.
void readPowerSupply(const std::filesystem::path& root, HostState& host);

// Percent of the host's RAM in use (MemTotal − MemAvailable of `meminfo`); 0 when unreadable.
double memoryUsedPercent(const std::filesystem::path& meminfo = "/proc/meminfo");

} // namespace goblin::volunteer
