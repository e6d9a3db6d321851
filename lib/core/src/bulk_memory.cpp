#include "goblin/core/bulk_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace goblin::core {
namespace {

constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
constexpr std::align_val_t kHeapAlignment{64};

// A mapping whose length is a multiple of 2 MiB starts on a 2 MiB boundary (Linux ≥ 6.7 aligns
// such anonymous mappings), so every page of it can be a huge one.
std::size_t mappedLength(std::size_t bytes) {
    return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

struct Mapping {
    void* memory = nullptr;
    std::size_t length = 0;
};

// An eighth of the machine's memory, between 256 MiB and 2 GiB: a training audit's forward and
// backward pass (dim-256 transformer, micro-batch 40) keeps more than 256 MiB of activations
// alive, and with less kept half of the node's time went to faulting in fresh pages.
std::size_t keptLimit() {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long pageSize = ::sysconf(_SC_PAGESIZE);
    const std::size_t physical = pages > 0 && pageSize > 0 ? static_cast<std::size_t>(pages) *
                                                                 static_cast<std::size_t>(pageSize)
                                                           : 0;
    return std::clamp(physical / 8, std::size_t{256} << 20, std::size_t{2048} << 20);
}

// Mappings given back, kept for the next buffer (up to keptLimit(), oldest dropped first), and
// the length of every mapping handed out.
class MappingPool {
public:
    // Every kept mapping is at least 2 MiB, so the list never outgrows this: giving a buffer back
    // never allocates.
    MappingPool() : m_limit(keptLimit()) { m_kept.reserve(m_limit / kHugePageBytes); }

    std::size_t limit() const { return m_limit; }

    void* take(std::size_t length) {
        {
            std::lock_guard lock(m_mutex);
            // The smallest kept mapping that holds `length` and wastes at most as much again.
            auto best = m_kept.end();
            for (auto it = m_kept.begin(); it != m_kept.end(); ++it) {
                if (it->length >= length && it->length <= 2 * length &&
                    (best == m_kept.end() || it->length < best->length))
                    best = it;
            }
            if (best != m_kept.end()) {
                const Mapping mapping = *best;
                m_live.emplace(mapping.memory, mapping.length); // may throw: nothing changed yet
                m_kept.erase(best);
                m_keptBytes -= mapping.length;
                return mapping.memory;
            }
        }
        void* memory =
            ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (memory == MAP_FAILED)
            throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
        // Advice only: where transparent huge pages are off, the buffer is made of 4 KiB pages.
        ::madvise(memory, length, MADV_HUGEPAGE);
#endif
        std::lock_guard lock(m_mutex);
        try {
            m_live.emplace(memory, length);
        } catch (...) {
            ::munmap(memory, length);
            throw;
        }
        return memory;
    }

    void give(void* memory) noexcept {
        std::lock_guard lock(m_mutex);
        auto live = m_live.find(memory);
        if (live == m_live.end())
            return;
        const Mapping mapping{memory, live->second};
        m_live.erase(live);
        if (mapping.length > m_limit) {
            ::munmap(mapping.memory, mapping.length);
            return;
        }
        while (m_keptBytes + mapping.length > m_limit) {
            ::munmap(m_kept.front().memory, m_kept.front().length);
            m_keptBytes -= m_kept.front().length;
            m_kept.erase(m_kept.begin());
        }
#ifdef MADV_FREE
        // The kernel may take the pages back under memory pressure (the next user then gets zero
        // pages); until then they are reused without a fault.
        ::madvise(mapping.memory, mapping.length, MADV_FREE);
#endif
        m_kept.push_back(mapping);
        m_keptBytes += mapping.length;
    }

    std::size_t keptBytes() {
        std::lock_guard lock(m_mutex);
        return m_keptBytes;
    }

    std::size_t releaseKept() noexcept {
        std::lock_guard lock(m_mutex);
        for (const Mapping& mapping : m_kept)
            ::munmap(mapping.memory, mapping.length);
        m_kept.clear();
        return std::exchange(m_keptBytes, 0);
    }

private:
    const std::size_t m_limit;
    std::mutex m_mutex;
    std::vector<Mapping> m_kept; // oldest first
    std::size_t m_keptBytes = 0;
    std::unordered_map<void*, std::size_t> m_live;
};

MappingPool& pool() {
    static MappingPool* instance = new MappingPool(); // never destroyed: buffers outlive statics
    return *instance;
}

} // namespace

void* allocateBulk(std::size_t bytes) {
    if (bytes < kHugePageBytes)
        return ::operator new(bytes == 0 ? 1 : bytes, kHeapAlignment);
    if (bytes > static_cast<std::size_t>(-1) - kHugePageBytes)
        throw std::bad_alloc();
    return pool().take(mappedLength(bytes));
}

void freeBulk(void* memory, std::size_t bytes) noexcept {
    if (memory == nullptr)
        return;
    if (bytes < kHugePageBytes)
        ::operator delete(memory, kHeapAlignment);
    else
        pool().give(memory);
}

std::size_t keptBulkLimit() {
    return pool().limit();
}

std::size_t keptBulkBytes() {
    return pool().keptBytes();
}

std::size_t releaseKeptBulk() noexcept {
    return pool().releaseKept();
}

void keepHeapMapped() {
#if defined(__GLIBC__)
    // 32 MiB is the largest threshold glibc accepts (half its arenas' heap size); the trim
    // threshold is glibc's upper bound on an int, so a free never trims.
    ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
    ::mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
#endif
}

} // namespace goblin::core
