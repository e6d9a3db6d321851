// What the volunteer lends and when: the throttle's settings, plain values copied between threads
// (the GUI thread fills them from QSettings; the throttle reads a copy). No Qt here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace goblin::volunteer {

// One span of allowed hours. day 0 is Monday; minutes count from local midnight. A range whose
// end is not after its start crosses midnight into the next day (Sunday crosses into Monday).
struct ScheduleRange {
    int day = 0;
    int startMinute = 0;
    int endMinute = 0;
    bool operator==(const ScheduleRange&) const = default;
};

struct GpuLimit {
    std::string device; // the device's id as the engine lists it now ("gpu0")
    bool enabled = true;
    int limitPercent = 100; // share of GPU time, 1-100
    // What the device is ("<name> / <vendor>"), so the setting follows the device when the
    // OpenCL platform lists devices in another order (empty in settings of older versions).
    std::string identity;
    bool operator==(const GpuLimit&) const = default;
};

struct ThrottleSettings {
    int cpuCores = 0;          // 0: every hardware thread
    int cpuLimitPercent = 100; // share of CPU time on those cores, 1-100
    std::vector<GpuLimit> gpus;
    int idleMinutes = 0;       // 0: compute while the user is active too
    int idleGraceSeconds = 30; // activity must last this long before computing stops
    bool pauseOnBattery = true;
    int minBatteryPercent = 20; // pause below this charge (0: never), resume 5 points above
    bool scheduleEnabled = false;
    std::vector<ScheduleRange> schedule; // allowed hours when enabled (none listed: never)
    int memoryCapMiB = 0;             // memory offered to the node (0: half of what is available)
    int pauseAboveMemoryPercent = 90; // pause above this host use, resume 5 below (0: never)
    std::int64_t networkCapMiBPerDay = 0; // 0: no cap
    bool operator==(const ThrottleSettings&) const = default;
};

} // namespace goblin::volunteer
