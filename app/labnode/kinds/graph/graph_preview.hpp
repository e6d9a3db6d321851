// The answer to plan_graph (docs/protocol.md, "Plan preview"): how the node would cut a graph job
// submitted now, for the volunteers connected now — the same checks and the same split as
// takeInGraph, without tensors, nothing stored. Pure; any thread (a worker runs it).
#pragma once

#include "goblin/net/messages/plan_messages.hpp"
#include "kinds/graph/graph_intake.hpp"

namespace goblin::labnode {

// The plan, or the error a submit_graph of the same fields would get.
Expected<net::GraphPlan> previewGraphPlan(const net::PlanGraph& request, const VolunteerPool& pool,
                                          const GraphIntakeSettings& settings);

} // namespace goblin::labnode
