// Memory for bulk buffers (tensor elements, message buffers). A buffer of 2 MiB or more is an
// anonymous mapping advised to be backed by transparent huge pages, and a freed one is kept (up to
// keptBulkLimit() in all, reclaimable by the kernel under memory pressure) for the next buffer of
// about its size: on the VMs this project runs on, the first touch of fresh memory costs 0.6-1.9 ms
// per MiB (page faults, zeroing, the host backing the page), and a 4096² matmul job moved about 900
// MiB through fresh buffers in the node alone. Smaller buffers come from the heap. Any thread.
#pragma once

#include <cstddef>
#include <new>

namespace goblin::core {

// Page-aligned for 2 MiB and more, 64-byte aligned below. Throws std::bad_alloc like operator new.
void* allocateBulk(std::size_t bytes);
// `bytes` must be the size the buffer was allocated with.
void freeBulk(void* memory, std::size_t bytes) noexcept;
// The most bytes of freed buffers kept: an eighth of the machine's memory, between 256 MiB and
// 2 GiB.
std::size_t keptBulkLimit();
// Bytes of freed buffers kept for reuse now (at most keptBulkLimit()).
std::size_t keptBulkBytes();
// Unmaps every kept buffer and returns their bytes. Kept pages count in the process's resident
// size until the kernel reclaims them, so a process going idle calls this to give them back.
std::size_t releaseKeptBulk() noexcept;

// For a long-running server's process, once at its start: every buffer under 32 MiB comes from
// glibc's heap and a freed one stays mapped for the next (glibc otherwise maps one of 128 KiB or
// more afresh, or trims the heap, and each reuse faults in zeroed pages again: on the node's
// audits, buffers of 256 KiB to 2 MiB, up to a tenth of its time). The process keeps its peak
// heap. Not for volunteers, whose resident memory must stay near what they lend.
void keepHeapMapped();

// An allocator over allocateBulk, for containers of bulk bytes (beast::basic_flat_buffer).
template <typename T> struct BulkAllocator {
    using value_type = T;

    BulkAllocator() = default;
    template <typename U> BulkAllocator(const BulkAllocator<U>&) noexcept {}

    T* allocate(std::size_t count) {
        if (count > static_cast<std::size_t>(-1) / sizeof(T))
            throw std::bad_array_new_length();
        return static_cast<T*>(allocateBulk(count * sizeof(T)));
    }
    void deallocate(T* memory, std::size_t count) noexcept { freeBulk(memory, count * sizeof(T)); }

    template <typename U> bool operator==(const BulkAllocator<U>&) const noexcept { return true; }
};

} // namespace goblin::core
