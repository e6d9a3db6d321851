// What the host probes saw, and the time, as the throttle's inputs. Plain values; the probes and
// the clock that fill them are injected, so the throttle is a pure function of these.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace goblin::volunteer {

struct HostState {
    std::optional<double> idleSeconds; // time since the user's last input; empty: no probe works
    bool onBattery = false;
    std::optional<int> batteryPercent; // empty: no battery
    double memoryUsedPercent = 0;      // of the host's RAM
    std::int64_t networkBytesToday = 0;
    int hardwareThreads = 1;
};

// Local wall time (for the schedule) and a monotonic time in seconds (for hysteresis and pauses).
struct ThrottleNow {
    double steadySeconds = 0;
    int weekday = 0;     // 0 = Monday … 6 = Sunday
    int minuteOfDay = 0; // 0 … 1439
};

// A pause the user asked for: none, until resumed, or until a monotonic time.
struct UserPause {
    double untilSteady = 0; // 0: not paused; +inf: until resumed
    static UserPause none() { return {}; }
    static UserPause indefinite() { return {std::numeric_limits<double>::infinity()}; }
    static UserPause until(double steadySeconds) { return {steadySeconds}; }
    bool activeAt(double steadySeconds) const { return steadySeconds < untilSteady; }
};

} // namespace goblin::volunteer
