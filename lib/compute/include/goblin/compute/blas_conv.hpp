// The catalog's conv2d (NCHW input, OIHW weight, stride, padding, dilation, groups) and its input
// and weight gradients through im2col and an Eigen/OpenBLAS GEMM per image and group, for the
// convolutions the lab node checks by Freivalds instead of comparing bits (docs/verification.md,
// "Graph tasks checked by Freivalds"): rounded in the BLAS's order, not the reference's. f32 and
// f64 only. Any compute thread.
#pragma once

#include "goblin/core/error.hpp"
#include "goblin/core/ops/attributes.hpp"
#include "goblin/core/ops/op_code.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::compute {

// `op` is conv2d (x, w), conv2d_input_grad (grad_out, w) or conv2d_weight_grad (x, grad_out), with
// the catalog's attributes; the result has the shape the catalog infers.
Expected<core::Tensor> blasConvolution(core::ops::OpCode op, const core::Tensor& first,
                                       const core::Tensor& second,
                                       const core::ops::Attributes& attrs);

} // namespace goblin::compute
