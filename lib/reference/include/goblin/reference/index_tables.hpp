// Index tables of the reference kernels that the OpenCL launches (lib/compute) reuse, so both
// backends walk broadcasts and reductions in the same order. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "goblin/core/tensor.hpp"

namespace goblin::reference {

// For each element of `out` (C order), the offset of the element of a tensor of shape `in` that
// NumPy broadcasting reads.
std::vector<std::int64_t> broadcastOffsets(const core::Shape& in, const core::Shape& out);

// Splits a shape into the kept positions (`bases`, C order of the kept dims) and the offsets of
// one reduction (`members`, C order of the reduced dims, relative to a base).
struct ReductionIndex {
    std::vector<std::int64_t> bases;
    std::vector<std::int64_t> members;
};
ReductionIndex reductionIndex(const core::Shape& shape, std::span<const std::int64_t> dims);

} // namespace goblin::reference
