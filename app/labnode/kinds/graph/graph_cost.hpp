// What a graph computes, in FLOPs, for the researcher's quota (node/quota_gate.hpp): two per
// multiply-add of its matmuls and convolutions, and for every other node one per element of its
// largest operand or result. An estimate of the work, not of any volunteer's time. Pure; any
// thread.
#pragma once

#include "goblin/core/graph/graph.hpp"

namespace goblin::labnode {

double graphFlops(const core::graph::Graph& graph, const core::graph::GraphPlan& plan);
// One node's share of it.
double nodeFlops(const core::graph::GraphNode& node, const core::graph::GraphPlan& plan);

} // namespace goblin::labnode
