// The op codes of the graph catalog (docs/ops.md) and the catalog version. Plain values; any
// thread. The catalog is the contract between lab node and volunteer: changing the op list changes
// the version, and the static_assert below breaks the build until both are updated together.
#pragma once

#include <cstdint>

namespace goblin::core::ops {

// Append only; never renumber (the wire form uses names, but stored tasks and tests use codes).
enum class OpCode : std::uint16_t {
    // binary elementwise arithmetic (NumPy broadcasting, same dtype)
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Maximum,
    Minimum,
    FloorDivide,
    Remainder,
    // comparisons (→ bool)
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    // logic (any dtype, truthiness → bool) and bitwise (integers, bool)
    LogicalAnd,
    LogicalOr,
    LogicalXor,
    LogicalNot,
    BitwiseAnd,
    BitwiseOr,
    BitwiseXor,
    BitwiseNot,
    // unary
    Neg,
    Abs,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Tanh,
    Sigmoid,
    Erf,
    Lgamma,
    Relu,
    Gelu,
    IsNan,
    // ternary / attribute-parameterised elementwise
    Where,
    Clamp,
    // reductions
    Sum,
    Mean,
    Amax,
    Amin,
    Prod,
    Var,
    Argmax,
    Argmin,
    Cumsum,
    // normalisations over one dim
    Softmax,
    LogSoftmax,
    // shape and dtype
    Cast,
    Reshape,
    Permute,
    Expand,
    // linear algebra
    Matmul,
    // catalog 3: indexing (indices i32/i64; out of range is a run-time invalid_input error)
    Gather,
    IndexSelect,
    Embedding,
    OneHot,
    IndexAdd,
    // normalisation over the trailing dims and its gradients
    LayerNorm,
    LayerNormBackward,
    // layout: variadic concat, slice, constant pad
    Concat,
    Slice,
    Pad,
    // 2-D convolution (NCHW) and its gradients
    Conv2d,
    Conv2dInputGrad,
    Conv2dWeightGrad,
    // 2-D max pooling: values, indices and the gradient
    MaxPool2d,
    MaxPool2dIndices,
    MaxPool2dBackward,
    // counter-based random mask (Philox4x32-10), no inputs
    DropoutMask,
    Count // not an op
};

inline constexpr int kOpCount = static_cast<int>(OpCode::Count);

// Version 1 held matmul only (the tile protocol); version 2 the graph catalog up to Matmul;
// version 3 adds indexing, layer_norm, concat/slice/pad, conv2d, max_pool2d and dropout_mask.
inline constexpr int kCatalogVersion = 3;

// ggml-rpc style guard: adding, removing or reordering ops without bumping kCatalogVersion (and
// this pair) fails the build.
static_assert(kCatalogVersion == 3 && kOpCount == 71,
              "the op list changed: bump kCatalogVersion, update docs/ops.md and this assert");

} // namespace goblin::core::ops
