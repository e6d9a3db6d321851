#include "memory_release.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace goblin::volunteer {

void releaseFreedMemory() {
#if defined(__GLIBC__)
    malloc_trim(0); // every arena, not only the main heap's top (glibc ≥ 2.8)
#endif
}

MemoryRelease::MemoryRelease(std::function<void()> release, int quietMs, QObject* parent)
    : QObject(parent), m_release(std::move(release)) {
    m_quiet.setSingleShot(true);
    m_quiet.setInterval(quietMs);
    connect(&m_quiet, &QTimer::timeout, this, [this] {
        ++m_releases;
        m_release();
    });
}

void MemoryRelease::setBusy(bool busy) {
    if (busy) {
        m_busy = true;
        m_quiet.stop();
        return;
    }
    if (!m_busy)
        return; // idle and already released (or never busy)
    m_busy = false;
    m_quiet.start();
}

} // namespace goblin::volunteer
