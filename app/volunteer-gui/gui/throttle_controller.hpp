// Wraps the throttle's tracker (throttle_tracker.hpp) in a QObject on the GUI thread:
// re-evaluates on a timer from the injected host probe and clock, and emits decisionChanged only
// when the decision changes.
#pragma once

#include <QObject>
#include <QTimer>

#include "throttle_tracker.hpp"

namespace goblin::volunteer {

class ThrottleController : public QObject {
    Q_OBJECT
public:
    ThrottleController(HostSampler sampler, ThrottleClock clock, QObject* parent = nullptr);

    void setSettings(const ThrottleSettings& settings);
    const ThrottleSettings& settings() const { return m_tracker.settings(); }
    void pauseUntilResumed();
    void pauseFor(double seconds);
    void resume();
    bool userPaused() const;
    const ThrottleDecision& decision() const { return m_tracker.decision(); }
    const HostState& lastHost() const { return m_tracker.lastHost(); }
    // Runs the policy now (the timer does this every second).
    void evaluate();
    void setInterval(int milliseconds) { m_timer.setInterval(milliseconds); }

Q_SIGNALS:
    void decisionChanged(const goblin::volunteer::ThrottleDecision& decision);

private:
    HostSampler m_sampler;
    ThrottleClock m_clock;
    ThrottleTracker m_tracker;
    QTimer m_timer;
};

} // namespace goblin::volunteer
