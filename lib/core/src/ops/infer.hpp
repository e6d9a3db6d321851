// Private: shape and dtype inference of each op family, called by inferOutput. Pure; any thread.
#pragma once

#include <span>
#include <string>

#include "goblin/core/ops/op_catalog.hpp"

namespace goblin::core::ops::detail {

using Inputs = std::span<const TensorSpec>;

Expected<TensorSpec> inferElementwise(OpCode code, Inputs inputs, const Attributes& attrs);
Expected<TensorSpec> inferReduction(OpCode code, Inputs inputs, const Attributes& attrs);
Expected<TensorSpec> inferShapeOp(OpCode code, Inputs inputs, const Attributes& attrs);
// Catalog 3 families.
Expected<TensorSpec> inferIndexOp(OpCode code, Inputs inputs, const Attributes& attrs);
Expected<TensorSpec> inferNormOp(OpCode code, Inputs inputs, const Attributes& attrs);
Expected<TensorSpec> inferLayoutOp(OpCode code, Inputs inputs, const Attributes& attrs);
Expected<TensorSpec> inferWindowOp(OpCode code, Inputs inputs, const Attributes& attrs);
Expected<TensorSpec> inferRandomOp(OpCode code, Inputs inputs, const Attributes& attrs);

template <class T> tl::unexpected<Error> failureOf(const Expected<T>& result) {
    return tl::unexpected(result.error());
}
tl::unexpected<Error> invalid(std::string message);
tl::unexpected<Error> mismatch(std::string message);
bool isIndexDType(DType dtype);
// Checks an output shape's element count (LimitExceeded past the limits of core::elementCount).
Expected<TensorSpec> checkedSpec(DType dtype, Shape shape);

// Normalises a possibly negative dim against rank; error when out of range.
Expected<std::int64_t> normaliseDim(std::int64_t dim, std::size_t rank);
std::string describe(const Shape& shape);

} // namespace goblin::core::ops::detail
