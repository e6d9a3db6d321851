// Test helpers that compare and copy tensors bit for bit, and draw uniform ones from a seeded
// generator. Any thread.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "goblin/core/tensor.hpp"

namespace goblin::testing {

inline bool sameBits(const core::Tensor& a, const core::Tensor& b) {
    return a.dtype() == b.dtype() && a.shape() == b.shape() && a.byteSize() == b.byteSize() &&
           (a.byteSize() == 0 ||
            std::memcmp(a.bytes().data(), b.bytes().data(), a.byteSize()) == 0);
}

inline bool sameBits(const std::vector<core::Tensor>& a, const std::vector<core::Tensor>& b) {
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!sameBits(a[i], b[i]))
            return false;
    return true;
}

// A copy with storage of its own (copying a Tensor shares it).
inline core::Tensor deepCopy(const core::Tensor& t) {
    core::Tensor copy = core::Tensor::allocate(t.dtype(), t.shape()).value();
    if (t.byteSize() != 0)
        std::memcpy(copy.bytes().data(), t.bytes().data(), t.byteSize());
    return copy;
}

inline std::vector<core::Tensor> deepCopies(const std::vector<core::Tensor>& tensors) {
    std::vector<core::Tensor> copies;
    for (const core::Tensor& t : tensors)
        copies.push_back(deepCopy(t));
    return copies;
}

// `n` f32 values uniform in [lo, hi) from a seeded std::mt19937 (whose sequence the standard
// fixes).
inline core::Tensor uniformTensor(std::mt19937& gen, std::int64_t n, double lo, double hi) {
    core::Tensor t = core::Tensor::allocate(core::DType::F32, {n}).value();
    for (float& value : t.values<float>())
        value = static_cast<float>(lo + (hi - lo) * static_cast<double>(gen() >> 8) * 0x1p-24);
    return t;
}

} // namespace goblin::testing
