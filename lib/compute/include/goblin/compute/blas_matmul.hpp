// The catalog's matmul (rank ≥ 2, batch dims broadcast) through Eigen and OpenBLAS, for graph
// nodes the lab node checks by Freivalds instead of comparing bits (docs/verification.md, "Graph
// tasks checked by Freivalds"): fast, and rounded in whatever order the BLAS chooses, so not the
// reference's bits. f32 and f64 only. OpenBLAS's thread count is the process's (EigenCpuBackend
// sets it). Any compute thread.
#pragma once

#include "goblin/core/error.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::compute {

Expected<core::Tensor> blasMatmul(const core::Tensor& a, const core::Tensor& b);

} // namespace goblin::compute
