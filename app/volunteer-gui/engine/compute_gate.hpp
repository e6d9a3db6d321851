// The switch between the engine's throttle plan and its compute thread: run or pause, hold new
// tasks, CPU threads and duty %. Thread-safe: the io thread sets the plan; the compute thread waits
// in enterTask() before a task and in betweenSlices() after each slice, where it rests to keep the
// duty cycle and parks while paused. shutdown() releases every wait for good. Time comes from an
// injected GateClock (the steady clock in production, a fake one in tests).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace goblin::volunteer {

struct ComputePlan {
    bool run = true;           // false: park at the next slice boundary
    bool holdNewTasks = false; // finish the running task, start no other
    int threads = 0;           // CPU threads (0: leave as is)
    int dutyPercent = 100;     // share of wall time spent computing, 1-100
    bool operator==(const ComputePlan&) const = default;
};

enum class GateVerdict { Go, Shutdown, Abandon };

// The gate's time source and its one timed wait. Called with the gate's lock held, on the thread
// that waits.
class GateClock {
public:
    using TimePoint = std::chrono::steady_clock::time_point;
    virtual ~GateClock() = default;
    virtual TimePoint now() = 0;
    // Blocks on `changed` (its mutex held by `lock`) until `stop()` or the clock reaches `until`.
    virtual void waitUntil(std::condition_variable& changed, std::unique_lock<std::mutex>& lock,
                           TimePoint until, const std::function<bool()>& stop) = 0;
};

// std::chrono::steady_clock and condition_variable::wait_until. Stateless; any thread.
class SteadyGateClock final : public GateClock {
public:
    TimePoint now() override { return std::chrono::steady_clock::now(); }
    void waitUntil(std::condition_variable& changed, std::unique_lock<std::mutex>& lock,
                   TimePoint until, const std::function<bool()>& stop) override {
        changed.wait_until(lock, until, stop);
    }
};

// Asked (under the gate's lock) whenever a waiter wakes: true drops the task being waited for.
using AbandonCheck = std::function<bool()>;

class ComputeGate {
public:
    ComputeGate() : ComputeGate(m_steadyClock) {}
    // `clock` must outlive the gate.
    explicit ComputeGate(GateClock& clock) : m_clock(clock) {}

    void setPlan(const ComputePlan& plan);
    ComputePlan plan() const;
    void shutdown();
    // Wakes every waiter to re-ask its AbandonCheck (after the engine made tasks stale).
    void wake();

    // Compute thread, before starting a task: waits while paused or holding new tasks.
    GateVerdict enterTask(const AbandonCheck& abandoned = {});
    // Compute thread, after a slice that computed for `busy`: rests so busy / (busy + rest) meets
    // the duty %. A pause or shutdown cuts the rest short.
    void rest(std::chrono::duration<double> busy);
    // Compute thread: waits while paused.
    GateVerdict waitWhilePaused(const AbandonCheck& abandoned = {});
    GateVerdict betweenSlices(std::chrono::duration<double> busy,
                              const AbandonCheck& abandoned = {}) {
        rest(busy);
        return waitWhilePaused(abandoned);
    }
    // True while the compute thread waits for a resume (not while resting for the duty cycle).
    bool parked() const;

private:
    SteadyGateClock m_steadyClock; // used unless a clock is injected
    GateClock& m_clock;
    mutable std::mutex m_mutex;
    std::condition_variable m_changed;
    ComputePlan m_plan; // guarded by m_mutex
    bool m_shutdown = false;
    bool m_parked = false;

    GateVerdict waitUntil(std::unique_lock<std::mutex>& lock, const std::function<bool()>& mayGo,
                          const AbandonCheck& abandoned);
};

} // namespace goblin::volunteer
