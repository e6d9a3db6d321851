// Reads the memory this host can lend right now (MemAvailable from /proc/meminfo). Any thread.
#pragma once

#include <cstdint>

namespace goblin::volunteer {

// Bytes available, or 0 when unknown.
std::int64_t availableMemoryBytes();

} // namespace goblin::volunteer
