#include "kinds/graph/graph_preview.hpp"

#include <algorithm>

#include "goblin/plan/stage_cut.hpp"
#include "kinds/graph/bytes_text.hpp"
#include "kinds/graph/graph_cost.hpp"

namespace goblin::labnode {
namespace {

std::int64_t outputBytes(const GraphChunk& chunk, std::size_t o) {
    return plan::specBytes(chunk.plan.specs.at(chunk.graph.outputs.at(o)));
}

// What a task's volunteer receives and sends back: its inputs, its outputs with the witnesses.
std::int64_t taskTraffic(const GraphChunk& chunk) {
    std::int64_t bytes = 0;
    for (const auto& input : chunk.graph.inputs)
        bytes += plan::specBytes(input.spec);
    for (std::size_t o = 0; o < chunk.graph.outputs.size(); ++o)
        bytes += outputBytes(chunk, o);
    return bytes;
}

std::int64_t boundaryInBytes(const GraphChunk& chunk) {
    std::int64_t bytes = 0;
    for (std::size_t i = 0; i < chunk.boundary.size(); ++i)
        if (chunk.boundary[i])
            bytes += plan::specBytes(chunk.graph.inputs.at(i).spec);
    return bytes;
}

// Values a stage only hands on to later stages: the node holds them until those are decided.
std::int64_t handedOnBytes(const GraphChunk& chunk) {
    std::int64_t bytes = 0;
    for (std::size_t o = 0; o < chunk.mergedAs.size(); ++o)
        if (chunk.mergedAs[o] == kNotMerged)
            bytes += outputBytes(chunk, o);
    return bytes;
}

// Why the job would wait if it came now; empty when connected volunteers can take every task.
std::string whyItWouldWait(const net::GraphPlan& plan, const VolunteerPool& pool) {
    if (pool.count == 0)
        return "no graph volunteer is connected now";
    const std::int64_t lent =
        plan.opinions > 1 && pool.count > 1 ? pool.secondBytes : pool.largestBytes;
    if (lent <= 0 || plan.largestTaskBytes <= lent)
        return {};
    std::string why = "no connected volunteer lends the memory its tasks need (the largest task "
                      "holds " +
                      bytesRoundedUp(plan.largestTaskBytes) + "; " +
                      (plan.opinions > 1 && pool.count > 1 ? "the second largest volunteer"
                                                           : "the largest volunteer") +
                      " lends " + bytesRoundedUp(lent) + ")";
    return why;
}

} // namespace

Expected<net::GraphPlan> previewGraphPlan(const net::PlanGraph& request, const VolunteerPool& pool,
                                          const GraphIntakeSettings& settings) {
    auto submission = parseGraphPlanRequest(request, settings.limits);
    if (!submission)
        return tl::unexpected(submission.error());
    auto planned = planChunks(*submission, pool, settings);
    if (!planned)
        return tl::unexpected(planned.error());
    const std::vector<GraphChunk>& chunks = planned->chunks;
    const std::int64_t opinions = planned->opinions;
    net::GraphPlan plan;
    plan.id = request.id;
    plan.tasks = static_cast<std::int64_t>(chunks.size());
    plan.ranges = static_cast<std::int64_t>(rangeCount(chunks));
    plan.opinions = opinions;
    plan.budgetBytes = planned->budget;
    plan.volunteers = pool.count;
    plan.largestVolunteerBytes = pool.largestBytes;
    for (const GraphChunk& chunk : chunks) {
        if (plan.stages.size() <= chunk.stage)
            plan.stages.resize(chunk.stage + 1);
        net::PlannedStage& stage = plan.stages[chunk.stage];
        const double flops = graphFlops(chunk.graph, chunk.plan);
        ++stage.tasks;
        stage.maxBytes = std::max(stage.maxBytes, chunk.peakBytes);
        stage.boundaryInBytes = std::max(stage.boundaryInBytes, boundaryInBytes(chunk));
        stage.flops += flops;
        stage.tiles = std::max(stage.tiles, chunk.tiles);
        plan.tiledMatmuls = std::max(plan.tiledMatmuls, chunk.tiledMatmuls);
        plan.flops += flops;
        plan.largestTaskBytes = std::max(plan.largestTaskBytes, chunk.peakBytes);
        plan.boundaryBytes += handedOnBytes(chunk);
        plan.trafficBytes += opinions * taskTraffic(chunk);
        if (plan.whyWhole.empty())
            plan.whyWhole = chunk.whyWhole;
    }
    plan.waits = whyItWouldWait(plan, pool);
    return plan;
}

} // namespace goblin::labnode
