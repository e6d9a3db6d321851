// Dtype and shape inference of the indexing ops: gather, index_select, embedding, one_hot and
// index_add. Index values are checked when the op runs (an out-of-range index is invalid_input).
#include <cmath>
#include <string>

#include "infer.hpp"

namespace goblin::core::ops::detail {
namespace {

Expected<std::int64_t> indexCount(const TensorSpec& index, const char* op) {
    if (!isIndexDType(index.dtype))
        return makeError(ErrorCode::UnsupportedDtype, std::string(op) +
                                                          ": indices must be i32 or i64, not " +
                                                          std::string(wireName(index.dtype)));
    if (index.shape.size() > 1)
        return mismatch(std::string(op) + ": the index must be 0-D or 1-D");
    return elementCount(index.shape);
}

Expected<std::int64_t> dimOf(const Attributes& attrs, std::size_t rank) {
    auto dim = attrInt(attrs, "dim", std::nullopt);
    if (!dim)
        return dim;
    return normaliseDim(*dim, rank);
}

Expected<TensorSpec> inferGather(const TensorSpec& x, const TensorSpec& index,
                                 const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {"dim"}); !only)
        return failureOf(only);
    if (!isIndexDType(index.dtype))
        return makeError(ErrorCode::UnsupportedDtype, "gather: indices must be i32 or i64");
    auto dim = dimOf(attrs, x.shape.size());
    if (!dim)
        return failureOf(dim);
    if (index.shape.size() != x.shape.size())
        return mismatch("gather: index " + describe(index.shape) + " must have the rank of " +
                        describe(x.shape));
    for (std::size_t d = 0; d < x.shape.size(); ++d)
        if (static_cast<std::int64_t>(d) != *dim && index.shape[d] > x.shape[d])
            return mismatch("gather: index " + describe(index.shape) + " is larger than " +
                            describe(x.shape) + " outside dim " + std::to_string(*dim));
    return TensorSpec{x.dtype, index.shape};
}

Expected<TensorSpec> inferIndexSelect(const TensorSpec& x, const TensorSpec& index,
                                      const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {"dim"}); !only)
        return failureOf(only);
    auto count = indexCount(index, "index_select");
    auto dim = dimOf(attrs, x.shape.size());
    if (!count || !dim)
        return failureOf(!count ? count : dim);
    if (x.shape.empty()) {
        if (*count != 1)
            return mismatch("index_select of a scalar takes exactly one index");
        return TensorSpec{x.dtype, {}};
    }
    Shape out = x.shape;
    out[static_cast<std::size_t>(*dim)] = *count;
    return TensorSpec{x.dtype, std::move(out)};
}

Expected<TensorSpec> inferEmbedding(const TensorSpec& weight, const TensorSpec& indices,
                                    const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {}); !only)
        return failureOf(only);
    if (!isIndexDType(indices.dtype))
        return makeError(ErrorCode::UnsupportedDtype, "embedding: indices must be i32 or i64");
    if (weight.shape.size() != 2)
        return mismatch("embedding: the weight must be 2-D, not " + describe(weight.shape));
    Shape out = indices.shape;
    out.push_back(weight.shape[1]);
    return checkedSpec(weight.dtype, std::move(out));
}

Expected<TensorSpec> inferOneHot(const TensorSpec& x, const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {"num_classes"}); !only)
        return failureOf(only);
    if (!isIndexDType(x.dtype))
        return makeError(ErrorCode::UnsupportedDtype, "one_hot takes i32 or i64 class indices");
    auto classes = attrInt(attrs, "num_classes", std::nullopt);
    if (!classes)
        return failureOf(classes);
    if (*classes < 1)
        return invalid("one_hot: num_classes must be ≥ 1");
    Shape out = x.shape;
    out.push_back(*classes);
    return checkedSpec(DType::I64, std::move(out));
}

Expected<TensorSpec> inferIndexAdd(Inputs inputs, const Attributes& attrs) {
    const TensorSpec& x = inputs[0];
    const TensorSpec& source = inputs[2];
    if (auto only = onlyAttributes(attrs, {"dim", "alpha"}); !only)
        return failureOf(only);
    if (x.dtype == DType::Bool || source.dtype != x.dtype)
        return makeError(ErrorCode::UnsupportedDtype,
                         "index_add: x and source must share one numeric dtype");
    auto count = indexCount(inputs[1], "index_add");
    auto dim = dimOf(attrs, x.shape.size());
    auto alpha = attrOptionalNumber(attrs, "alpha");
    if (!count || !dim || !alpha)
        return !count ? failureOf(count) : !dim ? failureOf(dim) : failureOf(alpha);
    const bool integral = *alpha && std::trunc(**alpha) == **alpha && std::abs(**alpha) < 9.2e18;
    if (*alpha && !isFloatingPoint(x.dtype) && !integral)
        return invalid("index_add: alpha of an integer tensor must be an integer");
    if (source.shape.size() != x.shape.size())
        return mismatch("index_add: source " + describe(source.shape) + " must have the rank of " +
                        describe(x.shape));
    for (std::size_t d = 0; d < x.shape.size(); ++d) {
        const bool isDim = static_cast<std::int64_t>(d) == *dim;
        if (source.shape[d] != (isDim ? *count : x.shape[d]))
            return mismatch("index_add: source " + describe(source.shape) + " does not fit " +
                            describe(x.shape) + " with " + std::to_string(*count) + " indices");
    }
    if (x.shape.empty() && *count != 1)
        return mismatch("index_add into a scalar takes exactly one index");
    return x;
}

} // namespace

Expected<TensorSpec> inferIndexOp(OpCode code, Inputs inputs, const Attributes& attrs) {
    switch (code) {
    case OpCode::Gather:
        return inferGather(inputs[0], inputs[1], attrs);
    case OpCode::IndexSelect:
        return inferIndexSelect(inputs[0], inputs[1], attrs);
    case OpCode::Embedding:
        return inferEmbedding(inputs[0], inputs[1], attrs);
    case OpCode::OneHot:
        return inferOneHot(inputs[0], attrs);
    default:
        return inferIndexAdd(inputs, attrs);
    }
}

} // namespace goblin::core::ops::detail
