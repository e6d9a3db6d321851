// Agreement of two computations of one graph (replicas from two volunteers, or a volunteer and the
// node's own CPU reference): each output is compared under a tolerance derived from the catalog's
// tolerance classes along the output's ancestry (docs/ops.md, "Comparing replicas").
// Pure functions; safe on any thread.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "goblin/core/graph/graph.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::verify {

// How closely two honest computations of one output must agree.
struct OutputTolerance {
    core::ops::TensorSpec spec;
    // Rounding budget in units of u: 0 means bit for bit (NaN matches NaN). Otherwise
    // |a_i − b_i| ≤ budget·u·(|a_i| + |b_i| + max_j |a_j|): the sum over every inexact op on the
    // output's ancestry of its class's budget (ulps + ulpsPerReduced·K, or K + 2 for sum- and
    // matmul-bound ops), each ancestor counted once however many paths lead from it; a normwise
    // bound that also covers cancellation. Used only for a backend that is not canonical.
    double budget = 0;
};

std::vector<OutputTolerance> outputTolerances(const core::graph::Graph& graph,
                                              const core::graph::GraphPlan& plan);

struct Agreement {
    bool agree = false;
    double worstRatio = 0; // largest |Δ| ÷ bound over all outputs (0 when bit for bit)
    std::string reason;    // why they disagree; empty when they agree
};

// Compares two output lists (graph.outputs order). Shapes and dtypes must equal the specs.
Agreement compareOutputs(std::span<const OutputTolerance> tolerances,
                         std::span<const core::Tensor> first, std::span<const core::Tensor> second);

} // namespace goblin::verify
