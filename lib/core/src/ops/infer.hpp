// Private: shape and dtype inference of each op family, called by inferOutput. Pure; any thread.
#pragma once

#include <span>

#include "goblin/core/ops/op_catalog.hpp"

namespace goblin::core::ops::detail {

using Inputs = std::span<const TensorSpec>;

Expected<TensorSpec> inferElementwise(OpCode code, Inputs inputs, const Attributes& attrs);
Expected<TensorSpec> inferReduction(OpCode code, Inputs inputs, const Attributes& attrs);
Expected<TensorSpec> inferShapeOp(OpCode code, Inputs inputs, const Attributes& attrs);

// Normalises a possibly negative dim against rank; error when out of range.
Expected<std::int64_t> normaliseDim(std::int64_t dim, std::size_t rank);
std::string describe(const Shape& shape);

} // namespace goblin::core::ops::detail
