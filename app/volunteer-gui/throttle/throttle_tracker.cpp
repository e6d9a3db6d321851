#include "throttle_tracker.hpp"

#include <chrono>
#include <ctime>

namespace goblin::volunteer {

ThrottleClock systemThrottleClock() {
    const auto started = std::chrono::steady_clock::now();
    return [started] {
        const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - started;
        const std::time_t wall = std::time(nullptr);
        std::tm local{};
        localtime_r(&wall, &local);
        // tm_wday counts from Sunday; the throttle's weekday from Monday.
        return ThrottleNow{elapsed.count(), (local.tm_wday + 6) % 7,
                           local.tm_hour * 60 + local.tm_min};
    };
}

bool ThrottleTracker::evaluate(const HostState& host, const ThrottleNow& now) {
    m_host = host;
    if (!m_pause.activeAt(now.steadySeconds))
        m_pause = UserPause::none();
    const ThrottleOutcome outcome = decideThrottle(m_settings, m_pause, m_host, now, m_memory);
    m_memory = outcome.memory;
    if (m_decided && outcome.decision == m_decision)
        return false;
    m_decided = true;
    m_decision = outcome.decision;
    return true;
}

} // namespace goblin::volunteer
