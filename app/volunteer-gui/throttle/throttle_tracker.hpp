// The throttle's state between evaluations, shared by the desktop's ThrottleController (a Qt
// timer) and the headless volunteer's HeadlessThrottle (an Asio timer): settings, the user's
// pause, the policy's hysteresis and the last decision. Plain values; used from one thread.
#pragma once

#include <functional>

#include "throttle_policy.hpp"

namespace goblin::volunteer {

using HostSampler = std::function<HostState()>;
using ThrottleClock = std::function<ThrottleNow()>;

// The real clock: steady seconds since the clock was made, local weekday and minute.
ThrottleClock systemThrottleClock();

class ThrottleTracker {
public:
    void setSettings(const ThrottleSettings& settings) { m_settings = settings; }
    const ThrottleSettings& settings() const { return m_settings; }
    void pauseUntilResumed() { m_pause = UserPause::indefinite(); }
    void pauseUntil(double steadySeconds) { m_pause = UserPause::until(steadySeconds); }
    void resume() { m_pause = UserPause::none(); }

    // Runs the policy on what the probes saw at `now`; true on the first call and whenever the
    // decision differs from the last one.
    bool evaluate(const HostState& host, const ThrottleNow& now);
    const ThrottleDecision& decision() const { return m_decision; }
    const HostState& lastHost() const { return m_host; }

private:
    ThrottleSettings m_settings;
    UserPause m_pause;
    ThrottleMemory m_memory;
    HostState m_host;
    ThrottleDecision m_decision;
    bool m_decided = false;
};

} // namespace goblin::volunteer
