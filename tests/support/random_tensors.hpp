// Random test tensors: never zero, mixed signs (so products cancel and |C| is much smaller than
// |A||B|), reproducible from a seed. Any thread.
#pragma once

#include <cstdint>
#include <random>

#include "goblin/core/tensor.hpp"

namespace goblin::testing {

// Magnitudes drawn uniformly from [low, high).
struct MagnitudeRange {
    double low = 0.25;
    double high = 4.0;
};

// An F32 or F64 tensor of `shape`; the same seed and range give the same values.
inline core::Tensor randomTensor(core::DType dtype, core::Shape shape, std::uint64_t seed,
                                 MagnitudeRange range = {}) {
    core::Tensor tensor = core::Tensor::allocate(dtype, std::move(shape)).value();
    std::mt19937_64 engine(seed);
    std::uniform_real_distribution<double> magnitude(range.low, range.high);
    for (std::int64_t i = 0; i < tensor.elementCount(); ++i) {
        const double value = (engine() & 1u) != 0 ? -magnitude(engine) : magnitude(engine);
        if (dtype == core::DType::F32)
            tensor.values<float>()[static_cast<std::size_t>(i)] = static_cast<float>(value);
        else
            tensor.values<double>()[static_cast<std::size_t>(i)] = value;
    }
    return tensor;
}

} // namespace goblin::testing
