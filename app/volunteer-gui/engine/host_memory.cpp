#include "host_memory.hpp"

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

void keepLargeBlocksMapped() {
#if defined(__GLIBC__)
    // A fixed threshold also turns off glibc's dynamic one (mallopt(3)).
    (void)::mallopt(M_MMAP_THRESHOLD, 64 * 1024);
#endif
}

} // namespace goblin::volunteer
