// The small interface every compute backend implements (Eigen on the CPU, OpenCL).
// A backend object is used by one compute thread at a time.
#pragma once

#include <string_view>

#include "goblin/compute/slice_hooks.hpp"
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
    // A backend that slices internally calls `hooks` between its slices; others ignore them.
    virtual Expected<core::Tensor> matmul(const core::Tensor& a, const core::Tensor& b,
                                          const SliceHooks& hooks) = 0;
    Expected<core::Tensor> matmul(const core::Tensor& a, const core::Tensor& b) {
        return matmul(a, b, SliceHooks{});
    }
    // True when matmul(a, b) will cut this product into short kernels of its own and call the
    // hooks between them (so a caller need not slice it); false when one call runs to the end.
    virtual bool slicesInternally(const core::Tensor& /*a*/, const core::Tensor& /*b*/) const {
        return false;
    }
};

} // namespace goblin::compute
