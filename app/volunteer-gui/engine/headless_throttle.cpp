#include "headless_throttle.hpp"

#include "throttle_plan.hpp"

namespace goblin::volunteer {

HeadlessThrottle::HeadlessThrottle(boost::asio::io_context& io, const ThrottleSettings& settings,
                                   HostSampler sampler, ThrottleClock clock, PlanSink plan,
                                   LogSink log, std::chrono::milliseconds interval)
    : m_timer(io), m_sampler(std::move(sampler)), m_clock(std::move(clock)),
      m_plan(std::move(plan)), m_log(std::move(log)), m_interval(interval) {
    m_tracker.setSettings(settings);
}

void HeadlessThrottle::start() {
    evaluate();
    schedule();
}

void HeadlessThrottle::schedule() {
    if (m_stopped)
        return;
    m_timer.expires_after(m_interval);
    m_timer.async_wait([this](const boost::system::error_code& ec) {
        if (ec || m_stopped)
            return;
        evaluate();
        schedule();
    });
}

void HeadlessThrottle::evaluate() {
    if (!m_tracker.evaluate(m_sampler(), m_clock()))
        return;
    m_plan(planFor(m_tracker.decision(), false));
    m_log("throttle: " + describeDecision(m_tracker.decision()));
}

std::string describeDecision(const ThrottleDecision& decision) {
    std::string text(describe(decision.reason));
    if (!decision.run)
        return text;
    return text + " (" + std::to_string(decision.cpuThreads) + " thread(s), " +
           std::to_string(decision.cpuDutyPercent) + " % CPU time)";
}

} // namespace goblin::volunteer
