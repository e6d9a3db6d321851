#include "throttle_controller.hpp"

namespace goblin::volunteer {

ThrottleController::ThrottleController(HostSampler sampler, ThrottleClock clock, QObject* parent)
    : QObject(parent), m_sampler(std::move(sampler)), m_clock(std::move(clock)) {
    m_timer.setInterval(1000);
    connect(&m_timer, &QTimer::timeout, this, &ThrottleController::evaluate);
    m_timer.start();
}

void ThrottleController::setSettings(const ThrottleSettings& settings) {
    m_tracker.setSettings(settings);
    evaluate();
}

void ThrottleController::pauseUntilResumed() {
    m_tracker.pauseUntilResumed();
    evaluate();
}

void ThrottleController::pauseFor(double seconds) {
    m_tracker.pauseUntil(m_clock().steadySeconds + seconds);
    evaluate();
}

void ThrottleController::resume() {
    m_tracker.resume();
    evaluate();
}

bool ThrottleController::userPaused() const {
    return decision().reason == ThrottleReason::UserPaused;
}

void ThrottleController::evaluate() {
    if (m_tracker.evaluate(m_sampler(), m_clock()))
        Q_EMIT decisionChanged(m_tracker.decision());
}

} // namespace goblin::volunteer
