// Reads the memory this host can lend right now (MemAvailable from /proc/meminfo), and keeps the
// process's memory near what its tasks hold. Any thread.
#pragma once

#include <cstdint>

namespace goblin::volunteer {

// Bytes available, or 0 when unknown.
std::int64_t availableMemoryBytes();

// Blocks of a 64th of the lent memory and more (at least 64 KiB, at most 32 MiB: tensors,
// frames) are mapped for themselves and unmapped when freed, so that the process returns a
// task's memory to the system when the task ends instead of keeping it in the allocator's heap
// (glibc raises its mmap threshold up to 32 MiB after the first large frees, and the heap then
// grows by each task's values: a volunteer lending 3 MiB grew its peak resident memory by about
// 11 MiB over three staged training rounds, 2.4-4.4 MiB with this). A volunteer lending 2 GiB
// or more keeps glibc's largest threshold, and its speed (mapping fresh blocks costs page
// faults: 10 % of a training round of the benchmark's LM with a 64 KiB threshold). Call once
// at start. A no-op off glibc.
void keepLargeBlocksMapped(std::int64_t lentBytes);

// The block size from which keepLargeBlocksMapped maps blocks for themselves.
std::int64_t mappedBlockBytes(std::int64_t lentBytes);

} // namespace goblin::volunteer
