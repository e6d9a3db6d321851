#include "throttle_policy.hpp"

#include <algorithm>

namespace goblin::volunteer {
namespace {

constexpr int kMinutesPerDay = 24 * 60;
constexpr int kMinutesPerWeek = 7 * kMinutesPerDay;

bool rangeContains(const ScheduleRange& range, int minuteOfWeek) {
    const int start = std::clamp(range.day, 0, 6) * kMinutesPerDay +
                      std::clamp(range.startMinute, 0, kMinutesPerDay - 1);
    const int end = std::clamp(range.endMinute, 0, kMinutesPerDay);
    const int startOfDay = std::clamp(range.startMinute, 0, kMinutesPerDay - 1);
    // end <= start: the range runs past midnight into the next day.
    const int length = end > startOfDay ? end - startOfDay : end + kMinutesPerDay - startOfDay;
    const int offset =
        ((minuteOfWeek - start) % kMinutesPerWeek + kMinutesPerWeek) % kMinutesPerWeek;
    return offset < length;
}

// Idle hysteresis: computing starts once the user has been idle `idleMinutes`; it stops only when
// activity (input less than `grace` seconds ago) has lasted `grace` seconds, so a nudged mouse
// does not stop work, and work does not restart until the full idle time has passed again.
bool updateIdle(const ThrottleSettings& settings, double idleSeconds, double now,
                ThrottleMemory& memory) {
    const double threshold = settings.idleMinutes * 60.0;
    const double grace = std::max(0, settings.idleGraceSeconds);
    if (!memory.idleReached) {
        memory.activeSince.reset();
        memory.idleReached = idleSeconds >= threshold;
        return memory.idleReached;
    }
    if (idleSeconds >= grace) {
        memory.activeSince.reset();
        return true;
    }
    if (!memory.activeSince)
        memory.activeSince = now - idleSeconds;
    if (now - *memory.activeSince < grace)
        return true;
    memory.idleReached = false;
    memory.activeSince.reset();
    return false;
}

bool updateBattery(const ThrottleSettings& settings, const HostState& host,
                   ThrottleMemory& memory) {
    if (!host.batteryPercent || settings.minBatteryPercent <= 0) {
        memory.batteryLow = false;
        return false;
    }
    const int level = *host.batteryPercent;
    if (memory.batteryLow)
        memory.batteryLow = level < settings.minBatteryPercent + kBatteryResumeMargin;
    else
        memory.batteryLow = level < settings.minBatteryPercent;
    return memory.batteryLow;
}

bool updateMemory(const ThrottleSettings& settings, const HostState& host, ThrottleMemory& memory) {
    const int limit = settings.pauseAboveMemoryPercent;
    if (limit <= 0 || limit > 100) {
        memory.memoryHigh = false;
        return false;
    }
    if (memory.memoryHigh)
        memory.memoryHigh = host.memoryUsedPercent >= limit - kMemoryResumeMargin;
    else
        memory.memoryHigh = host.memoryUsedPercent >= limit;
    return memory.memoryHigh;
}

} // namespace

bool scheduleAllows(const ThrottleSettings& settings, const ThrottleNow& now) {
    if (!settings.scheduleEnabled)
        return true;
    const int minuteOfWeek = std::clamp(now.weekday, 0, 6) * kMinutesPerDay +
                             std::clamp(now.minuteOfDay, 0, kMinutesPerDay - 1);
    return std::any_of(
        settings.schedule.begin(), settings.schedule.end(),
        [&](const ScheduleRange& range) { return rangeContains(range, minuteOfWeek); });
}

ThrottleOutcome decideThrottle(const ThrottleSettings& settings, const UserPause& pause,
                               const HostState& host, const ThrottleNow& now,
                               const ThrottleMemory& previous) {
    ThrottleOutcome out{{}, previous};
    ThrottleMemory& memory = out.memory;
    // Every band is updated on every call, whatever else holds work back, so the hysteresis state
    // is the same as if it had been tracked alone.
    const bool batteryLow = updateBattery(settings, host, memory);
    const bool memoryHigh = updateMemory(settings, host, memory);
    bool idleOk = true;
    bool idleUnknown = false;
    if (settings.idleMinutes > 0) {
        if (host.idleSeconds)
            idleOk = updateIdle(settings, *host.idleSeconds, now.steadySeconds, memory);
        else
            idleUnknown = true;
    } else {
        memory.idleReached = false;
        memory.activeSince.reset();
    }
    const std::int64_t capBytes = settings.networkCapMiBPerDay * 1024 * 1024;

    ThrottleReason reason = ThrottleReason::None;
    if (pause.activeAt(now.steadySeconds))
        reason = ThrottleReason::UserPaused;
    else if (!scheduleAllows(settings, now))
        reason = ThrottleReason::OutsideSchedule;
    else if (settings.pauseOnBattery && host.onBattery)
        reason = ThrottleReason::OnBattery;
    else if (batteryLow)
        reason = ThrottleReason::BatteryLow;
    else if (memoryHigh)
        reason = ThrottleReason::MemoryPressure;
    else if (capBytes > 0 && host.networkBytesToday >= capBytes)
        reason = ThrottleReason::NetworkCap;
    else if (idleUnknown)
        reason = ThrottleReason::IdleUnknown;
    else if (!idleOk)
        reason = ThrottleReason::NotIdle;

    ThrottleDecision& decision = out.decision;
    decision.run = reason == ThrottleReason::None;
    decision.reason = reason;
    const int hardware = std::max(1, host.hardwareThreads);
    decision.cpuThreads =
        settings.cpuCores <= 0 ? hardware : std::clamp(settings.cpuCores, 1, hardware);
    decision.cpuDutyPercent = std::clamp(settings.cpuLimitPercent, 1, 100);
    for (const GpuLimit& gpu : settings.gpus)
        decision.gpus.push_back(decision.run && gpu.enabled
                                    ? GpuPlan{true, std::clamp(gpu.limitPercent, 1, 100)}
                                    : GpuPlan{false, 0});
    return out;
}

std::string_view describe(ThrottleReason reason) {
    switch (reason) {
    case ThrottleReason::None:
        return "computing";
    case ThrottleReason::UserPaused:
        return "paused by you";
    case ThrottleReason::OutsideSchedule:
        return "waiting: outside the allowed hours";
    case ThrottleReason::OnBattery:
        return "waiting: on battery";
    case ThrottleReason::BatteryLow:
        return "waiting: battery low";
    case ThrottleReason::MemoryPressure:
        return "waiting: the computer needs its memory";
    case ThrottleReason::NetworkCap:
        return "waiting: today's network allowance is used";
    case ThrottleReason::IdleUnknown:
        return "waiting: cannot tell whether you are idle";
    case ThrottleReason::NotIdle:
        return "waiting: you are using the computer";
    }
    return "?";
}

} // namespace goblin::volunteer
