// Copies of a tensor's range along one dimension, and the reverse placement: how graph jobs are
// split along a batch dimension and merged back. Pure functions; any thread.
#pragma once

#include <cstdint>

#include "goblin/core/error.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::plan {

// Elements [offset, offset + count) of `tensor` along `dim`, as a new contiguous tensor.
Expected<core::Tensor> sliceAlong(const core::Tensor& tensor, int dim, std::int64_t offset,
                                  std::int64_t count);
// Writes `part` into `whole` at [offset, offset + part.shape[dim]) along `dim`; every other
// dimension and the dtype must match.
Expected<void> placeAlong(core::Tensor& whole, const core::Tensor& part, int dim,
                          std::int64_t offset);

} // namespace goblin::plan
