// The CPU reference executor of the op catalog: plain loops, sequential (fixed-order) reductions,
// no fast-math and no FMA contraction, so its answers are reproducible. Other backends are compared
// with it under each op's tolerance class. Stateless functions; call from a compute thread.
#pragma once

#include <cstddef>
#include <map>
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

// The step of plan.order after which each value is read no more: an executor may drop it then.
// Graph outputs: never (SIZE_MAX). Values no node reads and no output names are absent.
std::map<core::graph::ValueId, std::size_t> lastUses(const core::graph::Graph& graph,
                                                     const core::graph::GraphPlan& plan);

// A validated graph (plan from core::graph::validateGraph) on inputs given in graph.inputs order;
// returns the outputs in graph.outputs order. Inputs must match their declared dtype and shape.
// Each value is dropped after its last use, so at most the live values are held at once.
Expected<std::vector<core::Tensor>> runGraph(const core::graph::Graph& graph,
                                             const core::graph::GraphPlan& plan,
                                             std::span<const core::Tensor> inputs,
                                             const GraphRunHooks& hooks = {});

} // namespace goblin::reference
