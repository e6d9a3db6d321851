// Gives freed memory back to the system once the engine goes idle (io thread; owned by
// VolunteerEngine). A finished task frees its tensors, but their big buffers stay mapped in the
// bulk-memory pool (up to 256 MiB, goblin/core/bulk_memory.hpp) and glibc keeps the pages of
// small freed blocks in its arenas: a volunteer idle between jobs would otherwise hold its largest
// job's footprint. After work stops for a quiet spell both go back to the system; the headless
// volunteer and the desktop app both get this.
#pragma once

#include <chrono>
#include <functional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace goblin::volunteer {

// Unmaps the bulk-memory pool's kept buffers, then malloc_trim(0) on glibc (every arena).
void releaseFreedMemory();

class MemoryRelease {
public:
    // release: what returns the memory (tests count calls); quiet: idle this long first.
    explicit MemoryRelease(boost::asio::io_context& io,
                           std::function<void()> release = releaseFreedMemory,
                           std::chrono::milliseconds quiet = std::chrono::seconds(2));
    // After every change of the engine's work: whether any task is held or running.
    void setBusy(bool busy);
    int releases() const { return m_releases; }

private:
    boost::asio::steady_timer m_quiet;
    std::function<void()> m_release;
    std::chrono::milliseconds m_quietFor;
    bool m_busy = false;
    int m_releases = 0;
};

} // namespace goblin::volunteer
