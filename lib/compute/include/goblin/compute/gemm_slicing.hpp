// Pure planning for device GEMMs: does a product fit a device's memory, and how to cut it into
// slices (row blocks × k blocks, accumulated with beta = 1) so no single kernel outlasts a time
// budget. No OpenCL here; plain values, safe on any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "goblin/core/dtype.hpp"
#include "goblin/core/error.hpp"

namespace goblin::compute {

struct DeviceMemoryLimits {
    std::uint64_t globalBytes = 0;   // CL_DEVICE_GLOBAL_MEM_SIZE
    std::uint64_t maxAllocBytes = 0; // CL_DEVICE_MAX_MEM_ALLOC_SIZE
};

// LimitExceeded (with the numbers) when A (m×k), B (k×n) or C (m×n) is over the device's largest
// allocation, or when A+B+C plus the same again for CLBlast's padded copies is over its memory.
[[nodiscard]] Expected<void> checkGemmFits(const DeviceMemoryLimits& limits, core::DType dtype,
                                           std::int64_t m, std::int64_t k, std::int64_t n);

// C[row0 : row0+rows, :] += A[row0 : row0+rows, k0 : k0+depth] · B[k0 : k0+depth, :]
struct GemmSlice {
    std::int64_t row0 = 0, rows = 0, k0 = 0, depth = 0;
};

struct SlicePolicy {
    double flopsPerSecond = 1e9; // the device's measured rate
    double budgetSeconds = 0.5;  // the longest one kernel should run
    std::int64_t minRows = 64;   // slices never get thinner than this (unless m is smaller)
    std::int64_t minDepth = 64;  // nor shallower than this (unless k is smaller)
};

// Slices in dispatch order (row blocks outer, k blocks inner) covering m×k×n exactly once. Cuts
// along k first (keeping all rows), then along rows; a device too slow for the smallest slice
// gets the smallest slices, each over budget.
std::vector<GemmSlice> planGemmSlices(std::int64_t m, std::int64_t k, std::int64_t n,
                                      const SlicePolicy& policy);

} // namespace goblin::compute
