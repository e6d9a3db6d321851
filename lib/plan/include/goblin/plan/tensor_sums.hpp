// Σ weight[c] · part[c] over same-shaped floating-point tensors, accumulated in float64 in the
// order given and rounded once to the parts' dtype: how summed and averaged outputs of a split job
// are merged (a mean loss and its gradients over micro-batches), the same bits on every node. Pure;
// any thread.
#pragma once

#include <vector>

#include "goblin/core/error.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::plan {

Expected<core::Tensor> weightedSum(const std::vector<core::Tensor>& parts,
                                   const std::vector<double>& weights);

} // namespace goblin::plan
