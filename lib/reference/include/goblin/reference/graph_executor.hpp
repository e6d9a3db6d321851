// The CPU reference executor of the op catalog: plain loops, sequential (fixed-order) reductions,
// no fast-math and no FMA contraction, so its answers are reproducible. Other backends are compared
// with it under each op's tolerance class. Stateless functions; call from a compute thread.
#pragma once

#include <span>
#include <vector>

#include "goblin/core/error.hpp"
#include "goblin/core/graph/graph.hpp"
#include "goblin/core/ops/op_catalog.hpp"
#include "goblin/core/tensor.hpp"
#include "goblin/reference/graph_run_hooks.hpp"

namespace goblin::reference {

// One op on concrete tensors; validates with the catalog's inference first. Runtime failures
// (integer division by zero) are InvalidInput errors.
Expected<core::Tensor> runOp(core::ops::OpCode op, std::span<const core::Tensor> args,
                             const core::ops::Attributes& attrs);

// A validated graph (plan from core::graph::validateGraph) on inputs given in graph.inputs order;
// returns the outputs in graph.outputs order. Inputs must match their declared dtype and shape.
Expected<std::vector<core::Tensor>> runGraph(const core::graph::Graph& graph,
                                             const core::graph::GraphPlan& plan,
                                             std::span<const core::Tensor> inputs,
                                             const GraphRunHooks& hooks = {});

} // namespace goblin::reference
