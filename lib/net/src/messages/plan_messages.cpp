#include "goblin/net/messages/plan_messages.hpp"

#include <cmath>
#include <limits>

#include "goblin/net/json_fields.hpp"
#include "goblin/net/messages/message_type.hpp"
#include "wire_checks.hpp"

namespace goblin::net {

namespace json = boost::json;
using detail::invalid;

namespace {

constexpr std::int64_t kMaxCount = std::numeric_limits<std::int64_t>::max();
// Rows of a micro-batched job: a bound far above any tensor limit, so that products stay exact.
constexpr std::int64_t kMaxRows = std::int64_t{1} << 40;
// Stages a plan may list: far above what a task of the node's limits can be cut into.
constexpr std::size_t kMaxStages = 65536;

Expected<double> requireFlops(const json::object& control) {
    auto value = requireNumber(control, "flops");
    if (!value)
        return value;
    if (!std::isfinite(*value) || *value < 0)
        return invalid("'flops' must be a finite number >= 0");
    return value;
}

// An optional string field: absent (or null) gives an empty string.
Expected<std::string> optionalText(const json::object& control, std::string_view key) {
    const auto* value = control.if_contains(key);
    if (!value || value->is_null())
        return std::string();
    if (!value->is_string())
        return invalid(detail::joined({"'", key, "' must be a string"}));
    return std::string(value->get_string());
}

// An optional count: absent (or null) gives 0.
Expected<std::int64_t> optionalCount(const json::object& control, std::string_view key) {
    const auto* value = control.if_contains(key);
    if (!value || value->is_null())
        return std::int64_t{0};
    return requireIntIn(control, key, 0, kMaxCount);
}

Expected<PlannedStage> parseStage(const json::value& entry) {
    if (!entry.is_object())
        return invalid("each of 'stages' must be an object");
    const json::object& stage = entry.get_object();
    auto tasks = requireIntIn(stage, "tasks", 1, kMaxCount);
    auto bytes = requireIntIn(stage, "max_bytes", 0, kMaxCount);
    auto boundary = requireIntIn(stage, "boundary_in_bytes", 0, kMaxCount);
    auto flops = requireFlops(stage);
    if (!tasks)
        return tl::unexpected(tasks.error());
    if (!bytes)
        return tl::unexpected(bytes.error());
    if (!boundary)
        return tl::unexpected(boundary.error());
    if (!flops)
        return tl::unexpected(flops.error());
    auto tiles = optionalCount(stage, "tiles");
    if (!tiles)
        return tl::unexpected(tiles.error());
    return PlannedStage{*tasks, *bytes, *boundary, *flops, *tiles};
}

} // namespace

Message toMessage(const PlanGraph& plan) {
    json::object control = detail::controlOf(MessageType::PlanGraph);
    control["id"] = plan.id;
    control["graph"] = plan.graph;
    if (plan.batch)
        control["batch"] = *plan.batch;
    if (plan.verification)
        control["verification"] = *plan.verification;
    if (plan.rows)
        control["rows"] = *plan.rows;
    return Message{std::move(control), {}};
}

Message toMessage(const GraphPlan& plan) {
    json::object control = detail::controlOf(MessageType::GraphPlan);
    control["id"] = plan.id;
    control["tasks"] = plan.tasks;
    control["ranges"] = plan.ranges;
    control["opinions"] = plan.opinions;
    control["budget_bytes"] = plan.budgetBytes;
    control["volunteers"] = plan.volunteers;
    control["largest_volunteer_bytes"] = plan.largestVolunteerBytes;
    control["largest_task_bytes"] = plan.largestTaskBytes;
    control["boundary_bytes"] = plan.boundaryBytes;
    control["traffic_bytes"] = plan.trafficBytes;
    control["flops"] = plan.flops;
    json::array stages;
    for (const PlannedStage& stage : plan.stages)
        stages.push_back(json::object{{"tasks", stage.tasks},
                                      {"max_bytes", stage.maxBytes},
                                      {"boundary_in_bytes", stage.boundaryInBytes},
                                      {"flops", stage.flops}});
    for (std::size_t s = 0; s < plan.stages.size(); ++s)
        if (plan.stages[s].tiles > 0)
            stages[s].as_object()["tiles"] = plan.stages[s].tiles;
    control["stages"] = std::move(stages);
    if (plan.tiledMatmuls > 0)
        control["tiled_matmuls"] = plan.tiledMatmuls;
    if (!plan.waits.empty())
        control["waits"] = plan.waits;
    if (!plan.whyWhole.empty())
        control["why_whole"] = plan.whyWhole;
    return Message{std::move(control), {}};
}

Expected<PlanGraph> parsePlanGraph(const json::object& control) {
    if (auto ok = detail::requireType(control, MessageType::PlanGraph); !ok)
        return tl::unexpected(ok.error());
    if (control.contains("tensors") && control.at("tensors") != 0)
        return invalid("plan_graph carries no tensors: the graph declares its inputs");
    auto id = detail::optionalId(control);
    if (!id)
        return tl::unexpected(id.error());
    const auto* graph = control.if_contains("graph");
    if (!graph || !graph->is_object())
        return makeError(ErrorCode::InvalidInput, "plan_graph needs a 'graph' object");
    PlanGraph plan{*id, graph->get_object(), std::nullopt, std::nullopt, std::nullopt};
    if (const auto* batch = control.if_contains("batch"); batch && !batch->is_null()) {
        if (!batch->is_object())
            return makeError(ErrorCode::InvalidInput, "'batch' must be an object");
        plan.batch = batch->get_object();
    }
    if (const auto* verification = control.if_contains("verification");
        verification && !verification->is_null()) {
        auto name = detail::requireName(control, "verification");
        if (!name)
            return tl::unexpected(name.error());
        plan.verification = std::move(*name);
    }
    if (control.contains("rows") && !control.at("rows").is_null()) {
        auto rows = requireIntIn(control, "rows", 1, kMaxRows);
        if (!rows)
            return tl::unexpected(rows.error());
        plan.rows = *rows;
    }
    return plan;
}

Expected<GraphPlan> parseGraphPlan(const json::object& control) {
    if (auto ok = detail::requireType(control, MessageType::GraphPlan); !ok)
        return tl::unexpected(ok.error());
    auto id = detail::optionalId(control);
    if (!id)
        return tl::unexpected(id.error());
    GraphPlan plan;
    plan.id = *id;
    const std::pair<const char*, std::int64_t*> counts[] = {
        {"tasks", &plan.tasks},
        {"ranges", &plan.ranges},
        {"opinions", &plan.opinions},
        {"budget_bytes", &plan.budgetBytes},
        {"volunteers", &plan.volunteers},
        {"largest_volunteer_bytes", &plan.largestVolunteerBytes},
        {"largest_task_bytes", &plan.largestTaskBytes},
        {"boundary_bytes", &plan.boundaryBytes},
        {"traffic_bytes", &plan.trafficBytes}};
    for (const auto& [key, field] : counts) {
        auto value = requireIntIn(control, key, 0, kMaxCount);
        if (!value)
            return tl::unexpected(value.error());
        *field = *value;
    }
    auto flops = requireFlops(control);
    if (!flops)
        return tl::unexpected(flops.error());
    plan.flops = *flops;
    auto tiled = optionalCount(control, "tiled_matmuls");
    if (!tiled)
        return tl::unexpected(tiled.error());
    plan.tiledMatmuls = *tiled;
    const auto* stages = control.if_contains("stages");
    if (!stages || !stages->is_array() || stages->get_array().size() > kMaxStages)
        return invalid("'stages' must be a list of at most 65536 stages");
    for (const json::value& entry : stages->get_array()) {
        auto stage = parseStage(entry);
        if (!stage)
            return tl::unexpected(stage.error());
        plan.stages.push_back(*stage);
    }
    auto waits = optionalText(control, "waits");
    auto whyWhole = optionalText(control, "why_whole");
    if (!waits)
        return tl::unexpected(waits.error());
    if (!whyWhole)
        return tl::unexpected(whyWhole.error());
    plan.waits = std::move(*waits);
    plan.whyWhole = std::move(*whyWhole);
    return plan;
}

} // namespace goblin::net
