#include "goblin/compute/pause_token.hpp"

namespace goblin::compute {

void PauseToken::pause() {
    std::lock_guard lock(m_mutex);
    m_paused = true;
}

void PauseToken::resume() {
    {
        std::lock_guard lock(m_mutex);
        m_paused = false;
    }
    m_resumed.notify_all();
}

bool PauseToken::pauseRequested() const {
    std::lock_guard lock(m_mutex);
    return m_paused;
}

void PauseToken::checkpoint() {
    m_slicesDone.fetch_add(1);
    std::unique_lock lock(m_mutex);
    if (!m_paused)
        return;
    m_parked.store(true);
    m_resumed.wait(lock, [this] { return !m_paused; });
    m_parked.store(false);
}

} // namespace goblin::compute
