#include "host_memory.hpp"

#include <algorithm>
#include <fstream>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace goblin::volunteer {

std::int64_t availableMemoryBytes() {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    std::int64_t value = 0;
    std::string unit;
    while (meminfo >> key >> value >> unit) {
        if (key == "MemAvailable:")
            return value * 1024;
    }
    return 0;
}

std::int64_t mappedBlockBytes(std::int64_t lentBytes) {
    return std::clamp<std::int64_t>(lentBytes / 64, std::int64_t{64} << 10, std::int64_t{32} << 20);
}

void keepLargeBlocksMapped(std::int64_t lentBytes) {
#if defined(__GLIBC__)
    // A fixed threshold also turns off glibc's dynamic one (mallopt(3)).
    (void)::mallopt(M_MMAP_THRESHOLD, static_cast<int>(mappedBlockBytes(lentBytes)));
#else
    (void)lentBytes;
#endif
}

} // namespace goblin::volunteer
