// Reads the memory this host can lend right now (MemAvailable from /proc/meminfo), and keeps the
// process's memory near what its tasks hold. Any thread.
#pragma once

#include <cstdint>

namespace goblin::volunteer {

// Bytes available, or 0 when unknown.
std::int64_t availableMemoryBytes();

// Blocks of 64 KiB and more (tensors, frames) are mapped for themselves and unmapped when freed,
// so that the process returns a task's memory to the system when the task ends instead of
// keeping it in the allocator's heap (glibc raises its mmap threshold after the first large
// frees, and the heap then grows by each task's values: a volunteer lending 3 MiB grew its peak
// resident memory by about 11 MiB over three staged training rounds, about 2.5 MiB with this).
// Call once at start, before other threads allocate. A no-op off glibc.
void keepLargeBlocksMapped();

} // namespace goblin::volunteer
