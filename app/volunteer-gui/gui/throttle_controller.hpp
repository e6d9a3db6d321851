// Wraps the pure throttle policy in a QObject on the GUI thread: re-evaluates on a timer from the
// injected host probe and clock, and emits decisionChanged only when the decision changes.
#pragma once

#include <QObject>
#include <QTimer>

#include <functional>

#include "throttle_policy.hpp"

namespace goblin::volunteer {

using HostSampler = std::function<HostState()>;
using ThrottleClock = std::function<ThrottleNow()>;

// The real clock: steady seconds since start, local weekday and minute.
ThrottleClock systemThrottleClock();

class ThrottleController : public QObject {
    Q_OBJECT
public:
    ThrottleController(HostSampler sampler, ThrottleClock clock, QObject* parent = nullptr);

    void setSettings(const ThrottleSettings& settings);
    const ThrottleSettings& settings() const { return m_settings; }
    void pauseUntilResumed();
    void pauseFor(double seconds);
    void resume();
    bool userPaused() const;
    const ThrottleDecision& decision() const { return m_decision; }
    const HostState& lastHost() const { return m_host; }
    // Runs the policy now (the timer does this every second).
    void evaluate();
    void setInterval(int milliseconds) { m_timer.setInterval(milliseconds); }

Q_SIGNALS:
    void decisionChanged(const goblin::volunteer::ThrottleDecision& decision);

private:
    HostSampler m_sampler;
    ThrottleClock m_clock;
    ThrottleSettings m_settings;
    UserPause m_pause;
    ThrottleMemory m_memory;
    HostState m_host;
    ThrottleDecision m_decision;
    bool m_decided = false;
    QTimer m_timer;
};

} // namespace goblin::volunteer
