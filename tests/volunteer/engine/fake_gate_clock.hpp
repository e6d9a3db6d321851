// A GateClock for tests: time moves only when the test calls advance(), and the test can wait,
// without timeouts, until the compute thread sleeps in the gate or has re-checked its wake-up.
// Thread-safe: the compute thread sleeps in waitUntil, the test thread advances.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

#include "compute_gate.hpp"

namespace goblin::volunteer::testing {

class FakeGateClock final : public GateClock {
public:
    using Duration = TimePoint::duration;

    // Called after every advance(), so the sleeper re-checks its deadline (e.g. gate.wake()).
    void onAdvance(std::function<void()> wake) { m_wake = std::move(wake); }

    TimePoint now() override {
        std::lock_guard lock(m_mutex);
        return m_now;
    }

    void waitUntil(std::condition_variable& changed, std::unique_lock<std::mutex>& gateLock,
                   TimePoint until, const std::function<bool()>& stop) override {
        {
            std::lock_guard lock(m_mutex);
            m_sleeps.push_back(until - m_now);
            ++m_sleeping;
        }
        m_events.notify_all();
        changed.wait(gateLock, [&] {
            std::unique_lock lock(m_mutex);
            const TimePoint at = m_now;
            lock.unlock(); // stop() may take other locks; never hold ours across it
            const bool done = stop() || at >= until;
            lock.lock();
            m_checks.push_back({at, done});
            lock.unlock();
            m_events.notify_all();
            return done;
        });
        {
            std::lock_guard lock(m_mutex);
            --m_sleeping;
        }
        m_events.notify_all();
    }

    void advance(Duration step) {
        {
            std::lock_guard lock(m_mutex);
            m_now += step;
        }
        if (m_wake)
            m_wake();
    }

    // Every sleep asked for so far (deadline − now at the call), in order.
    std::vector<Duration> sleeps() {
        std::lock_guard lock(m_mutex);
        return m_sleeps;
    }
    // Blocks until the sleeper is inside its n-th sleep (1-based) or later.
    void awaitSleep(std::size_t n) {
        std::unique_lock lock(m_mutex);
        m_events.wait(lock, [&] { return m_sleeps.size() >= n && m_sleeping > 0; });
    }
    // Blocks until a sleeper checked its wake-up at fake time `at` or later (advance() makes it
    // check); returns whether that check ended the sleep.
    bool awaitCheckAt(TimePoint at) {
        std::unique_lock lock(m_mutex);
        const Check* found = nullptr;
        m_events.wait(lock, [&] {
            for (const Check& check : m_checks)
                if (check.at >= at)
                    return (found = &check) != nullptr;
            return false;
        });
        return found->done;
    }

private:
    std::mutex m_mutex;
    std::condition_variable m_events;
    TimePoint m_now{};
    std::vector<Duration> m_sleeps;
    struct Check {
        TimePoint at;
        bool done;
    };
    std::vector<Check> m_checks;
    int m_sleeping = 0;
    std::function<void()> m_wake;
};

} // namespace goblin::volunteer::testing
