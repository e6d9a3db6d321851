#include "memory_release.hpp"

#include "goblin/core/bulk_memory.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace goblin::volunteer {

void releaseFreedMemory() {
    core::releaseKeptBulk();
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

MemoryRelease::MemoryRelease(boost::asio::io_context& io, std::function<void()> release,
                             std::chrono::milliseconds quiet)
    : m_quiet(io), m_release(std::move(release)), m_quietFor(quiet) {}

void MemoryRelease::setBusy(bool busy) {
    if (busy) {
        m_busy = true;
        m_quiet.cancel();
        return;
    }
    if (!m_busy)
        return; // idle and already released (or never busy)
    m_busy = false;
    m_quiet.expires_after(m_quietFor);
    m_quiet.async_wait([this](const boost::system::error_code& ec) {
        if (ec)
            return;
        ++m_releases;
        m_release();
    });
}

} // namespace goblin::volunteer
