#include "compute_gate.hpp"

#include <algorithm>

namespace goblin::volunteer {

void ComputeGate::setPlan(const ComputePlan& plan) {
    {
        std::lock_guard lock(m_mutex);
        m_plan = plan;
    }
    m_changed.notify_all();
}

ComputePlan ComputeGate::plan() const {
    std::lock_guard lock(m_mutex);
    return m_plan;
}

void ComputeGate::shutdown() {
    {
        std::lock_guard lock(m_mutex);
        m_shutdown = true;
    }
    m_changed.notify_all();
}

void ComputeGate::wake() {
    {
        // Taking the lock orders the caller's earlier writes before the waiters' re-check.
        std::lock_guard lock(m_mutex);
    }
    m_changed.notify_all();
}

bool ComputeGate::parked() const {
    std::lock_guard lock(m_mutex);
    return m_parked;
}

GateVerdict ComputeGate::waitUntil(std::unique_lock<std::mutex>& lock,
                                   const std::function<bool()>& mayGo,
                                   const AbandonCheck& abandoned) {
    m_parked = true;
    m_changed.wait(lock, [&] { return m_shutdown || mayGo() || (abandoned && abandoned()); });
    m_parked = false;
    const GateVerdict verdict = m_shutdown                 ? GateVerdict::Shutdown
                                : abandoned && abandoned() ? GateVerdict::Abandon
                                                           : GateVerdict::Go;
    return verdict;
}

GateVerdict ComputeGate::enterTask(const AbandonCheck& abandoned) {
    std::unique_lock lock(m_mutex);
    return waitUntil(
        lock, [this] { return m_plan.run && !m_plan.holdNewTasks; }, abandoned);
}

void ComputeGate::rest(std::chrono::duration<double> busy) {
    std::unique_lock lock(m_mutex);
    const int duty = std::clamp(m_plan.dutyPercent, 1, 100);
    if (duty >= 100)
        return;
    // busy / (busy + rest) = duty  →  rest = busy · (100 − duty) / duty
    const auto rest = busy * (100.0 - duty) / duty;
    const auto until =
        m_clock.now() + std::chrono::duration_cast<GateClock::TimePoint::duration>(rest);
    m_clock.waitUntil(m_changed, lock, until, [this] { return m_shutdown || !m_plan.run; });
}

GateVerdict ComputeGate::waitWhilePaused(const AbandonCheck& abandoned) {
    std::unique_lock lock(m_mutex);
    return waitUntil(
        lock, [this] { return m_plan.run; }, abandoned);
}

} // namespace goblin::volunteer
