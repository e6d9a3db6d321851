// Dtype and shape inference of cast, reshape, permute, expand and batched matmul.
#include <algorithm>
#include <string>

#include "infer.hpp"

namespace goblin::core::ops::detail {
namespace {

template <class T> tl::unexpected<Error> failure(const Expected<T>& result) {
    return tl::unexpected(result.error());
}

Expected<TensorSpec> inferCast(const TensorSpec& input, const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {"dtype"}); !only)
        return failure(only);
    auto dtype = attrDType(attrs, "dtype");
    if (!dtype)
        return failure(dtype);
    return TensorSpec{*dtype, input.shape};
}

Expected<TensorSpec> inferReshape(const TensorSpec& input, const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {"shape"}); !only)
        return failure(only);
    auto shape = attrIntList(attrs, "shape", std::nullopt);
    if (!shape)
        return failure(shape);
    const std::int64_t total = elementCount(input.shape).value();
    Shape explicitDims;
    int inferred = -1;
    for (std::size_t i = 0; i < shape->size(); ++i) {
        const std::int64_t dim = (*shape)[i];
        if (dim == -1 && inferred < 0) {
            inferred = static_cast<int>(i);
            continue;
        }
        if (dim < 0)
            return makeError(ErrorCode::ShapeMismatch,
                             "reshape: bad dimension " + std::to_string(dim));
        explicitDims.push_back(dim);
    }
    auto explicitCount = elementCount(explicitDims);
    if (!explicitCount)
        return failure(explicitCount);
    const std::int64_t known = *explicitCount;
    Shape out = *shape;
    if (inferred >= 0) {
        if (known == 0)
            return makeError(ErrorCode::ShapeMismatch,
                             "reshape: -1 is ambiguous with a zero dimension");
        out[static_cast<std::size_t>(inferred)] = total / known;
    }
    auto count = elementCount(out);
    if (!count)
        return failure(count);
    if (*count != total)
        return makeError(ErrorCode::ShapeMismatch, "reshape: cannot view " + describe(input.shape) +
                                                       " as " + describe(*shape));
    return TensorSpec{input.dtype, std::move(out)};
}

Expected<TensorSpec> inferPermute(const TensorSpec& input, const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {"dims"}); !only)
        return failure(only);
    auto dims = attrIntList(attrs, "dims", std::nullopt);
    if (!dims)
        return failure(dims);
    const std::size_t rank = input.shape.size();
    if (dims->size() != rank)
        return makeError(ErrorCode::ShapeMismatch, "permute: dims must list every dim once");
    std::vector<bool> seen(rank, false);
    Shape out;
    for (std::int64_t dim : *dims) {
        auto normal = rank == 0 ? makeError(ErrorCode::InvalidInput, "permute of a scalar")
                                : normaliseDim(dim, rank);
        if (!normal)
            return failure(normal);
        if (seen[static_cast<std::size_t>(*normal)])
            return makeError(ErrorCode::InvalidInput,
                             "permute: dim " + std::to_string(dim) + " repeats");
        seen[static_cast<std::size_t>(*normal)] = true;
        out.push_back(input.shape[static_cast<std::size_t>(*normal)]);
    }
    return TensorSpec{input.dtype, std::move(out)};
}

Expected<TensorSpec> inferExpand(const TensorSpec& input, const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {"shape"}); !only)
        return failure(only);
    auto shape = attrIntList(attrs, "shape", std::nullopt);
    if (!shape)
        return failure(shape);
    if (shape->size() < input.shape.size())
        return makeError(ErrorCode::ShapeMismatch, "expand: the target has a smaller rank");
    Shape out = *shape;
    const std::size_t offset = out.size() - input.shape.size();
    for (std::size_t i = 0; i < out.size(); ++i) {
        const bool mapped = i >= offset;
        const std::int64_t from = mapped ? input.shape[i - offset] : 1;
        if (out[i] == -1 && mapped)
            out[i] = from;
        if (out[i] < 0 || (from != 1 && from != out[i]))
            return makeError(ErrorCode::ShapeMismatch, "expand: cannot expand " +
                                                           describe(input.shape) + " to " +
                                                           describe(*shape));
    }
    if (auto count = elementCount(out); !count)
        return failure(count);
    return TensorSpec{input.dtype, std::move(out)};
}

Expected<TensorSpec> inferMatmul(const TensorSpec& a, const TensorSpec& b,
                                 const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {}); !only)
        return failure(only);
    if (a.dtype != b.dtype || a.dtype == DType::Bool)
        return makeError(ErrorCode::UnsupportedDtype,
                         "matmul takes two inputs of one numeric dtype");
    if (a.shape.size() < 2 || b.shape.size() < 2)
        return makeError(ErrorCode::ShapeMismatch,
                         "matmul takes inputs of rank ≥ 2 (reshape vectors)");
    const std::int64_t k = a.shape.back();
    if (b.shape[b.shape.size() - 2] != k)
        return makeError(ErrorCode::ShapeMismatch, "matmul: inner dimensions of " +
                                                       describe(a.shape) + " and " +
                                                       describe(b.shape) + " differ");
    auto batch = broadcastShapes(Shape(a.shape.begin(), a.shape.end() - 2),
                                 Shape(b.shape.begin(), b.shape.end() - 2));
    if (!batch)
        return makeError(ErrorCode::ShapeMismatch, "matmul batch dims: " + batch.error().message);
    batch->push_back(a.shape[a.shape.size() - 2]);
    batch->push_back(b.shape.back());
    if (auto count = elementCount(*batch); !count)
        return failure(count);
    return TensorSpec{a.dtype, std::move(*batch)};
}

} // namespace

Expected<TensorSpec> inferShapeOp(OpCode code, Inputs inputs, const Attributes& attrs) {
    switch (code) {
    case OpCode::Cast:
        return inferCast(inputs[0], attrs);
    case OpCode::Reshape:
        return inferReshape(inputs[0], attrs);
    case OpCode::Permute:
        return inferPermute(inputs[0], attrs);
    case OpCode::Expand:
        return inferExpand(inputs[0], attrs);
    default:
        return inferMatmul(inputs[0], inputs[1], attrs);
    }
}

} // namespace goblin::core::ops::detail
