// Private: the reference kernels by family and the index helpers they share. Any thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "goblin/core/ops/op_catalog.hpp"
#include "goblin/core/tensor.hpp"
#include "goblin/reference/index_tables.hpp"

namespace goblin::reference::detail {

using core::Shape;
using core::Tensor;
using core::ops::Attributes;
using core::ops::OpCode;
using core::ops::TensorSpec;
using Args = std::span<const Tensor>;
using reference::broadcastOffsets;
using reference::ReductionIndex;
using reference::reductionIndex;

// Calls f(T{}) with the C++ element type of dtype.
template <class F> decltype(auto) visitDType(core::DType dtype, F&& f) {
    switch (dtype) {
    case core::DType::F32:
        return f(float{});
    case core::DType::F64:
        return f(double{});
    case core::DType::I32:
        return f(std::int32_t{});
    case core::DType::I64:
        return f(std::int64_t{});
    case core::DType::Bool:
        break;
    }
    return f(bool{});
}

// C-order strides (in elements) of a shape.
std::vector<std::int64_t> stridesOf(const Shape& shape);
// Element i of an i32 or i64 index tensor.
std::int64_t indexAt(const Tensor& index, std::size_t i);
// A shape seen as [outer, size, inner] around one dim (a scalar is [1, 1, 1]).
struct DimSplit {
    std::int64_t outer = 1;
    std::int64_t size = 1;
    std::int64_t inner = 1;
};
DimSplit splitAt(const Shape& shape, std::size_t dim);
// Offsets of every multi-index over `dims` of `shape` (in that order, C order), with `strides`.
std::vector<std::int64_t> offsetsAlong(const Shape& shape, const std::vector<std::int64_t>& strides,
                                       const std::vector<std::size_t>& dims);
// A tensor read along the rows (the last dim) of an output: where each row starts in the tensor
// and its step along the row (0 where it broadcasts), so only one offset per row is materialised.
struct RowWalk {
    std::vector<std::int64_t> rowStarts;
    std::int64_t step = 0;
    std::int64_t width = 1;
};
// A tensor of shape `in` read as NumPy broadcasting to `out` reads it.
RowWalk broadcastWalk(const Shape& in, const Shape& out);

Expected<Tensor> runElementwise(OpCode op, Args args, const Attributes& attrs,
                                const TensorSpec& out);
Expected<Tensor> runReduction(OpCode op, Args args, const Attributes& attrs, const TensorSpec& out);
Expected<Tensor> runShapeOp(OpCode op, Args args, const Attributes& attrs, const TensorSpec& out);
// Catalog 3 families.
Expected<Tensor> runIndexOp(OpCode op, Args args, const Attributes& attrs, const TensorSpec& out);
Expected<Tensor> runLayoutOp(OpCode op, Args args, const Attributes& attrs, const TensorSpec& out);
Expected<Tensor> runNormOp(OpCode op, Args args, const Attributes& attrs, const TensorSpec& out);
Expected<Tensor> runConvOp(OpCode op, Args args, const Attributes& attrs, const TensorSpec& out);
Expected<Tensor> runPoolOp(OpCode op, Args args, const Attributes& attrs, const TensorSpec& out);
Expected<Tensor> runRandomOp(OpCode op, Args args, const Attributes& attrs, const TensorSpec& out);

} // namespace goblin::reference::detail
