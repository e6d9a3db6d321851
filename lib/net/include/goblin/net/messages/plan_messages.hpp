// Typed messages with which a researcher sees how the node would cut a graph job before anything
// of it travels (docs/protocol.md, "Plan preview"): plan_graph and its reply, graph_plan.
// Builders write the exact wire fields; parsers validate every field of a hostile control object.
// Pure functions on values; safe on any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "goblin/core/error.hpp"
#include "goblin/net/message.hpp"

namespace goblin::net {

// → {"type":"plan_graph","id","graph"[,"batch"][,"verification"][,"rows"]}: the fields of a
// submit_graph without its tensors (the graph declares every input's dtype and shape); "rows" is
// what the marked inputs of a micro-batched job would carry (they declare one micro-batch).
struct PlanGraph {
    std::int64_t id = 0;
    boost::json::object graph;
    std::optional<boost::json::object> batch;
    std::optional<std::string> verification;
    std::optional<std::int64_t> rows;
};

// One stage of the plan (stage 0 alone when nothing is cut): its tasks (one per batch range),
// the most one of them holds at once, the boundary values the largest of them reads from earlier
// stages, and what they compute.
struct PlannedStage {
    std::int64_t tasks = 0;
    std::int64_t maxBytes = 0;
    std::int64_t boundaryInBytes = 0;
    double flops = 0;
    std::int64_t tiles = 0; // the most matmul tiles one task of it computes ("tiles", optional)
};

// ← {"type":"graph_plan","id","tasks","ranges","opinions","budget_bytes","volunteers",
// "largest_volunteer_bytes","largest_task_bytes","boundary_bytes","traffic_bytes","flops",
// "stages":[…][,"tiled_matmuls"][,"waits"][,"why_whole"]}.
struct GraphPlan {
    std::int64_t id = 0;
    std::int64_t tasks = 0;
    std::int64_t ranges = 0;
    std::int64_t opinions = 2;    // volunteers that compute each task
    std::int64_t budgetBytes = 0; // the most a task may hold (0: not limited)
    std::int64_t volunteers = 0;  // graph volunteers connected now
    std::int64_t largestVolunteerBytes = 0;
    std::int64_t largestTaskBytes = 0;
    std::int64_t boundaryBytes = 0; // values handed from stage to stage, all ranges
    std::int64_t trafficBytes = 0;  // at most, to and from volunteers
    double flops = 0;
    // Products cut into tiles in each range ("tiled_matmuls", optional).
    std::int64_t tiledMatmuls = 0;
    std::vector<PlannedStage> stages;
    std::string waits;    // why it would wait now (no connected volunteer holds a task); or empty
    std::string whyWhole; // why a range over the budget stays whole; or empty
};

Message toMessage(const PlanGraph& plan);
Message toMessage(const GraphPlan& plan);

// Errors are InvalidMessage (InvalidInput for a graph or batch that is not an object, as
// submit_graph answers) naming the field; a request's "id" is optional (0 when absent).
[[nodiscard]] Expected<PlanGraph> parsePlanGraph(const boost::json::object& control);
[[nodiscard]] Expected<GraphPlan> parseGraphPlan(const boost::json::object& control);

} // namespace goblin::net
