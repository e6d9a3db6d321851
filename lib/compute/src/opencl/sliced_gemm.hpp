// Runs a row-major GEMM on device buffers through CLBlast, one slice per kernel, waiting for each
// slice and honouring a PauseToken between slices. Used by the backend's compute thread only.
#pragma once

#include <cstdint>
#include <vector>

#include "cl_headers.hpp"
#include "goblin/compute/gemm_slicing.hpp"
#include "goblin/compute/pause_token.hpp"
#include "goblin/core/dtype.hpp"
#include "goblin/core/error.hpp"

namespace goblin::compute::opencl {

// C[slice rows, :] += A[slice rows, slice depth] · B[slice depth, :] for row-major A (m×k),
// B (k×n), C (m×n) of `dtype`; returns when the device has finished it.
[[nodiscard]] Expected<void> runGemmSlice(cl::CommandQueue& queue, core::DType dtype,
                                          const cl::Buffer& a, const cl::Buffer& b, cl::Buffer& c,
                                          std::int64_t k, std::int64_t n, const GemmSlice& slice);

struct SlicedGemmStats {
    double pausedSeconds = 0.0; // time spent parked in the pause token
    double longestSliceSeconds = 0.0;
};

// C = A·B: zeroes C, then runs every slice in order. `pause` may be null.
[[nodiscard]] Expected<SlicedGemmStats>
runSlicedGemm(cl::CommandQueue& queue, core::DType dtype, const cl::Buffer& a, const cl::Buffer& b,
              cl::Buffer& c, std::int64_t m, std::int64_t k, std::int64_t n,
              const std::vector<GemmSlice>& slices, PauseToken* pause);

} // namespace goblin::compute::opencl
