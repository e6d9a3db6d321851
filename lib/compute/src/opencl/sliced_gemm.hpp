// Runs a row-major GEMM on device buffers through CLBlast, one slice per kernel, waiting for each
// slice and calling the SliceHooks between slices. Used by the backend's compute thread only.
#pragma once

#include <cstdint>
#include <vector>

#include "cl_headers.hpp"
#include "goblin/compute/gemm_slicing.hpp"
#include "goblin/compute/slice_hooks.hpp"
#include "goblin/core/dtype.hpp"
#include "goblin/core/error.hpp"

namespace goblin::compute::opencl {

// C[slice rows, :] += A[slice rows, slice depth] · B[slice depth, :] for row-major A (m×k),
// B (k×n), C (m×n) of `dtype`; returns when the device has finished it.
[[nodiscard]] Expected<void> runGemmSlice(cl::CommandQueue& queue, core::DType dtype,
                                          const cl::Buffer& a, const cl::Buffer& b, cl::Buffer& c,
                                          std::int64_t k, std::int64_t n, const GemmSlice& slice);

struct SlicedGemmStats {
    double hookSeconds = 0.0; // time spent in the hooks (resting, paused)
    double longestSliceSeconds = 0.0;
};

// C = A·B: zeroes C, then runs every slice in order, calling hooks.betweenSlices (when set) after
// each; Internal error when it asks to stop.
[[nodiscard]] Expected<SlicedGemmStats>
runSlicedGemm(cl::CommandQueue& queue, core::DType dtype, const cl::Buffer& a, const cl::Buffer& b,
              cl::Buffer& c, std::int64_t m, std::int64_t k, std::int64_t n,
              const std::vector<GemmSlice>& slices, const SliceHooks& hooks);

} // namespace goblin::compute::opencl
