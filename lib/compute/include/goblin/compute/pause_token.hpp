// A pause switch shared between whoever throttles (GUI, throttle policy, tests) and a backend that
// dispatches work in slices. Thread-safe: any thread may pause/resume; the compute thread calls
// checkpoint() between slices and blocks there while paused.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace goblin::compute {

class PauseToken {
public:
    void pause();
    void resume();
    bool pauseRequested() const;
    // True while the compute thread is blocked in checkpoint().
    bool parked() const { return m_parked.load(); }
    // Slices finished since construction (progress, and what tests watch).
    std::int64_t slicesDone() const { return m_slicesDone.load(); }

    // Compute thread, between slices: counts the slice just finished, then blocks while paused.
    void checkpoint();

private:
    mutable std::mutex m_mutex;
    std::condition_variable m_resumed;
    bool m_paused = false; // guarded by m_mutex
    std::atomic<bool> m_parked{false};
    std::atomic<std::int64_t> m_slicesDone{0};
};

} // namespace goblin::compute
