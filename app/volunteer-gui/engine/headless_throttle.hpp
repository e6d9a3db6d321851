// The headless volunteer's throttle (io thread): every interval it samples the injected host
// probe and clock, runs the shared policy (ThrottleTracker) and, when the decision changes, hands
// the engine the new compute plan and logs it. The desktop does the same with a Qt timer
// (ThrottleController).
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "compute_gate.hpp"
#include "throttle_tracker.hpp"

namespace goblin::volunteer {

class HeadlessThrottle {
public:
    using PlanSink = std::function<void(const ComputePlan&)>;
    using LogSink = std::function<void(const std::string&)>;

    HeadlessThrottle(boost::asio::io_context& io, const ThrottleSettings& settings,
                     HostSampler sampler, ThrottleClock clock, PlanSink plan, LogSink log,
                     std::chrono::milliseconds interval = std::chrono::seconds(1));

    // Decides once at once (so the engine starts with the right plan), then on every tick.
    void start();
    // No tick after this, not even one whose wait ended before it (queued already, it would
    // otherwise run and schedule the next: the io_context never ran out of work).
    void stop() {
        m_stopped = true;
        m_timer.cancel();
    }
    const ThrottleDecision& decision() const { return m_tracker.decision(); }

private:
    void evaluate();
    void schedule();

    boost::asio::steady_timer m_timer;
    ThrottleTracker m_tracker;
    HostSampler m_sampler;
    ThrottleClock m_clock;
    PlanSink m_plan;
    LogSink m_log;
    std::chrono::milliseconds m_interval;
    bool m_stopped = false;
};

// "computing (2 thread(s), 50 % CPU time)", "waiting: you are using the computer".
std::string describeDecision(const ThrottleDecision& decision);

} // namespace goblin::volunteer
