// Checks shared by every backend before a matmul: ranks, dtypes, inner sizes, BLAS dimension
// limits. Pure functions; safe on any thread.
#pragma once

#include <string>

#include "goblin/core/error.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::compute {

// "[2, 3]"
std::string shapeText(const core::Shape& shape);

// ShapeMismatch, UnsupportedDtype or LimitExceeded when C = A·B cannot be computed.
[[nodiscard]] Expected<void> validateMatmul(const core::Tensor& a, const core::Tensor& b);

} // namespace goblin::compute
