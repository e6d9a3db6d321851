#include "host_memory.hpp"

#include <fstream>
#include <string>

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

} // namespace goblin::volunteer
