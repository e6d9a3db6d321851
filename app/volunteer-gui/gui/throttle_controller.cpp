#include "throttle_controller.hpp"

#include <QDateTime>
#include <QElapsedTimer>

#include <memory>

namespace goblin::volunteer {

ThrottleClock systemThrottleClock() {
    auto started = std::make_shared<QElapsedTimer>();
    started->start();
    return [started] {
        const QDateTime local = QDateTime::currentDateTime();
        const QTime time = local.time();
        return ThrottleNow{static_cast<double>(started->elapsed()) / 1000.0,
                           local.date().dayOfWeek() - 1, time.hour() * 60 + time.minute()};
    };
}

ThrottleController::ThrottleController(HostSampler sampler, ThrottleClock clock, QObject* parent)
    : QObject(parent), m_sampler(std::move(sampler)), m_clock(std::move(clock)) {
    m_timer.setInterval(1000);
    connect(&m_timer, &QTimer::timeout, this, &ThrottleController::evaluate);
    m_timer.start();
}

void ThrottleController::setSettings(const ThrottleSettings& settings) {
    m_settings = settings;
    evaluate();
}

void ThrottleController::pauseUntilResumed() {
    m_pause = UserPause::indefinite();
    evaluate();
}

void ThrottleController::pauseFor(double seconds) {
    m_pause = UserPause::until(m_clock().steadySeconds + seconds);
    evaluate();
}

void ThrottleController::resume() {
    m_pause = UserPause::none();
    evaluate();
}

bool ThrottleController::userPaused() const {
    return m_decision.reason == ThrottleReason::UserPaused;
}

void ThrottleController::evaluate() {
    m_host = m_sampler();
    const ThrottleNow now = m_clock();
    if (!m_pause.activeAt(now.steadySeconds))
        m_pause = UserPause::none();
    const ThrottleOutcome outcome = decideThrottle(m_settings, m_pause, m_host, now, m_memory);
    m_memory = outcome.memory;
    if (m_decided && outcome.decision == m_decision)
        return;
    m_decided = true;
    m_decision = outcome.decision;
    Q_EMIT decisionChanged(m_decision);
}

} // namespace goblin::volunteer
