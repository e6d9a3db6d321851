// The small interface every compute backend implements (Eigen on the CPU today, OpenCL later).
// A backend object is used by one compute thread at a time.
#pragma once

#include <string_view>

#include "goblin/core/error.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::compute {

class Backend {
public:
    virtual ~Backend() = default;
    // Stable name reported to the node, e.g. "cpu-eigen".
    virtual std::string_view name() const = 0;
    // C = A·B for 2-D tensors A (m×k) and B (k×n) of the same floating dtype.
    // Wrong ranks, shapes or dtypes are errors (ShapeMismatch, UnsupportedDtype), never asserts.
    virtual Expected<core::Tensor> matmul(const core::Tensor& a, const core::Tensor& b) = 0;
};

} // namespace goblin::compute
