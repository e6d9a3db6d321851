// The throttle as a pure decision: (settings, user pause, host state, now, memory) → what to run.
// `ThrottleMemory` carries the hysteresis between calls (idle grace, battery and memory bands), so
// the same inputs always give the same output. No clock, no probes, no threads: call from any one.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "host_state.hpp"
#include "throttle_settings.hpp"

namespace goblin::volunteer {

// Why work is held back, most important first when several apply.
enum class ThrottleReason {
    None,
    UserPaused,
    OutsideSchedule,
    OnBattery,
    BatteryLow,
    MemoryPressure,
    NetworkCap,
    IdleUnknown, // "only when idle" is set but no idle probe works
    NotIdle,
};

struct GpuPlan {
    bool enabled = false;
    int dutyPercent = 0;
    bool operator==(const GpuPlan&) const = default;
};

struct ThrottleDecision {
    bool run = false;
    ThrottleReason reason = ThrottleReason::None;
    int cpuThreads = 1;
    int cpuDutyPercent = 100;
    std::vector<GpuPlan> gpus; // one per ThrottleSettings::gpus entry
    bool operator==(const ThrottleDecision&) const = default;
};

struct ThrottleMemory {
    bool idleReached = false; // the user has been idle long enough; stays until activity lasts
    std::optional<double> activeSince; // steady time activity was first seen while idleReached
    bool batteryLow = false;
    bool memoryHigh = false;
    bool operator==(const ThrottleMemory&) const = default;
};

struct ThrottleOutcome {
    ThrottleDecision decision;
    ThrottleMemory memory;
};

constexpr int kBatteryResumeMargin = 5; // percentage points above the minimum charge
constexpr int kMemoryResumeMargin = 5;  // percentage points below the memory limit

ThrottleOutcome decideThrottle(const ThrottleSettings& settings, const UserPause& pause,
                               const HostState& host, const ThrottleNow& now,
                               const ThrottleMemory& memory);

// True when the weekly schedule allows `now` (a disabled schedule allows everything).
bool scheduleAllows(const ThrottleSettings& settings, const ThrottleNow& now);

// A short English phrase for the window and the tray tooltip ("waiting: on battery").
std::string_view describe(ThrottleReason reason);

} // namespace goblin::volunteer
