// Dtype and shape inference of reductions (dims + keepdim), arg-reductions, cumsum and softmax.
#include <algorithm>
#include <string>

#include "infer.hpp"

namespace goblin::core::ops::detail {
namespace {

// The reduced dims in ascending order; all dims when the attribute is missing or empty.
Expected<IntList> reducedDims(const Attributes& attrs, std::size_t rank) {
    auto dims = attrIntList(attrs, "dims", IntList{});
    if (!dims)
        return dims;
    IntList out;
    if (dims->empty()) {
        for (std::size_t i = 0; i < rank; ++i)
            out.push_back(static_cast<std::int64_t>(i));
        return out;
    }
    for (std::int64_t dim : *dims) {
        auto normal = normaliseDim(dim, rank);
        if (!normal)
            return tl::unexpected(normal.error());
        if (std::find(out.begin(), out.end(), *normal) != out.end())
            return makeError(ErrorCode::InvalidInput,
                             "dim " + std::to_string(dim) + " appears twice");
        out.push_back(*normal);
    }
    std::sort(out.begin(), out.end());
    return out;
}

Shape reducedShape(const Shape& shape, const IntList& dims, bool keepdim) {
    Shape out;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        const bool reduced =
            std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(i)) != dims.end();
        if (!reduced)
            out.push_back(shape[i]);
        else if (keepdim)
            out.push_back(1);
    }
    return out;
}

std::int64_t reducedCount(const Shape& shape, const IntList& dims) {
    std::int64_t count = 1;
    for (std::int64_t dim : dims)
        count *= shape.empty() ? 1 : shape[static_cast<std::size_t>(dim)];
    return count;
}

// PyTorch accumulates integer sums, products and cumsums in int64.
DType accumulated(DType dtype) {
    return dtype == DType::I32 ? DType::I64 : dtype;
}

tl::unexpected<Error> dtypeError(OpCode code, DType dtype, const char* want) {
    return makeError(ErrorCode::UnsupportedDtype, std::string(opInfo(code).name) + " takes " +
                                                      want + ", not " +
                                                      std::string(wireName(dtype)));
}

Expected<TensorSpec> inferDimReduction(OpCode code, const TensorSpec& input,
                                       const Attributes& attrs) {
    const bool isVar = code == OpCode::Var;
    auto only = isVar ? onlyAttributes(attrs, {"dims", "keepdim", "correction"})
                      : onlyAttributes(attrs, {"dims", "keepdim"});
    if (!only)
        return tl::unexpected(only.error());
    const bool needsFloat = code == OpCode::Mean || isVar;
    if (needsFloat ? !isFloatingPoint(input.dtype) : input.dtype == DType::Bool)
        return dtypeError(code, input.dtype,
                          needsFloat ? "a floating-point dtype" : "a numeric dtype");
    auto dims = reducedDims(attrs, input.shape.size());
    auto keepdim = attrBool(attrs, "keepdim", false);
    auto correction = attrInt(attrs, "correction", 1);
    if (!dims || !keepdim || !correction)
        return tl::unexpected(!dims      ? dims.error()
                              : !keepdim ? keepdim.error()
                                         : correction.error());
    if (*correction < 0)
        return makeError(ErrorCode::InvalidInput, "var: correction must be ≥ 0");
    const bool minMax = code == OpCode::Amax || code == OpCode::Amin;
    if (minMax && reducedCount(input.shape, *dims) == 0)
        return makeError(ErrorCode::ShapeMismatch,
                         std::string(opInfo(code).name) + " of an empty reduction has no identity");
    const bool widens = code == OpCode::Sum || code == OpCode::Prod;
    return TensorSpec{widens ? accumulated(input.dtype) : input.dtype,
                      reducedShape(input.shape, *dims, *keepdim)};
}

Expected<TensorSpec> inferArgReduction(OpCode code, const TensorSpec& input,
                                       const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {"dim", "keepdim"}); !only)
        return tl::unexpected(only.error());
    if (input.dtype == DType::Bool)
        return dtypeError(code, input.dtype, "a numeric dtype");
    auto keepdim = attrBool(attrs, "keepdim", false);
    if (!keepdim)
        return tl::unexpected(keepdim.error());
    if (attrs.find("dim") == attrs.end()) {
        // No dim: the index into the flattened tensor.
        if (reducedCount(input.shape, reducedDims({}, input.shape.size()).value()) == 0)
            return makeError(ErrorCode::ShapeMismatch, "argmax/argmin of an empty tensor");
        return TensorSpec{DType::I64, *keepdim ? Shape(input.shape.size(), 1) : Shape{}};
    }
    auto dim = attrInt(attrs, "dim", std::nullopt);
    if (!dim)
        return tl::unexpected(dim.error());
    auto normal = normaliseDim(*dim, input.shape.size());
    if (!normal)
        return tl::unexpected(normal.error());
    const IntList dims{*normal};
    if (reducedCount(input.shape, dims) == 0)
        return makeError(ErrorCode::ShapeMismatch, "argmax/argmin over an empty dim");
    return TensorSpec{DType::I64, reducedShape(input.shape, dims, *keepdim)};
}

Expected<TensorSpec> inferAlongDim(OpCode code, const TensorSpec& input, const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {"dim"}); !only)
        return tl::unexpected(only.error());
    const bool isCumsum = code == OpCode::Cumsum;
    if (isCumsum ? input.dtype == DType::Bool : !isFloatingPoint(input.dtype))
        return dtypeError(code, input.dtype,
                          isCumsum ? "a numeric dtype" : "a floating-point dtype");
    auto dim = attrInt(attrs, "dim", std::nullopt);
    if (!dim)
        return tl::unexpected(dim.error());
    if (auto normal = normaliseDim(*dim, input.shape.size()); !normal)
        return tl::unexpected(normal.error());
    return TensorSpec{isCumsum ? accumulated(input.dtype) : input.dtype, input.shape};
}

} // namespace

Expected<TensorSpec> inferReduction(OpCode code, Inputs inputs, const Attributes& attrs) {
    switch (code) {
    case OpCode::Argmax:
    case OpCode::Argmin:
        return inferArgReduction(code, inputs[0], attrs);
    case OpCode::Cumsum:
    case OpCode::Softmax:
    case OpCode::LogSoftmax:
        return inferAlongDim(code, inputs[0], attrs);
    default:
        return inferDimReduction(code, inputs[0], attrs);
    }
}

} // namespace goblin::core::ops::detail
