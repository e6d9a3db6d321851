// The orders a stage cut takes a graph's nodes in (stage_cut.hpp). Pure; any thread.
#pragma once

#include <cstddef>
#include <vector>

#include "goblin/core/graph/graph.hpp"

namespace goblin::plan {

// Kahn's algorithm taking ready nodes first in, first out: how validateGraph ordered nodes when
// jobs were cut by every value (StageMeasure::EveryValue), so that they reload with the same
// stages. Node indices; a validated graph's nodes all appear.
std::vector<std::size_t> breadthFirstOrder(const core::graph::Graph& graph);

// The plan's order, with each node that only rearranges inputs, constants and such nodes' values
// (cast, reshape, permute, expand, slice, concat: a parameter's reshape or transpose) moved to
// just before its first reader instead of up front, and each reshape of a computed value (free:
// it shares the storage) moved to just after the value is made, so that the stage making a value
// also outputs its reshape (a gradient's flat part) rather than hand the value on. A node sorts
// by (its place, its position): a moved node's place is its first reader's place, or its
// argument's; any other node's is its position, so producers stay before their readers. Nodes no
// output depends on are left out: no stage computes them.
std::vector<std::size_t> lateOrder(const core::graph::Graph& graph,
                                   const core::graph::GraphPlan& plan);

} // namespace goblin::plan
