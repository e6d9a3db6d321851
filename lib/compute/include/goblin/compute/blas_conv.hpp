// The catalog's conv2d (NCHW input, OIHW weight, stride, padding, dilation, groups) through
// im2col and an Eigen/OpenBLAS GEMM per image and group, for the convolutions the lab node checks
// by Freivalds instead of comparing bits (docs/verification.md, "Graph tasks checked by
// Freivalds"): rounded in the BLAS's order, not the reference's. f32 and f64 only. Any compute
// thread.
#pragma once

#include "goblin/core/error.hpp"
#include "goblin/core/ops/attributes.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::compute {

Expected<core::Tensor> blasConv2d(const core::Tensor& x, const core::Tensor& w,
                                  const core::ops::Attributes& attrs);

} // namespace goblin::compute
