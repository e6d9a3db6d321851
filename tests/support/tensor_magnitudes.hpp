// |t| widened to float64, element by element (the magnitudes a check's bound is computed from).
// Any thread.
#pragma once

#include <cmath>

#include "goblin/core/tensor.hpp"

namespace goblin::testing {

// An F64 tensor of t's shape holding |t|; t is F32 or F64.
inline core::Tensor absF64(const core::Tensor& t) {
    core::Tensor out = core::Tensor::allocate(core::DType::F64, t.shape()).value();
    auto values = out.values<double>();
    if (t.dtype() == core::DType::F32)
        for (std::size_t i = 0; i < values.size(); ++i)
            values[i] = std::abs(static_cast<double>(t.values<float>()[i]));
    else
        for (std::size_t i = 0; i < values.size(); ++i)
            values[i] = std::abs(t.values<double>()[i]);
    return out;
}

} // namespace goblin::testing
