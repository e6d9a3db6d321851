#include "kinds/graph/stage_chunks.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <span>

#include "goblin/core/graph/graph_json.hpp"
#include "goblin/core/ops/op_catalog.hpp"
#include "goblin/net/content_digest.hpp"
#include "goblin/net/limits.hpp"
#include "goblin/plan/lifted_ends.hpp"
#include "goblin/plan/matmul_tiles.hpp"
#include "goblin/plan/stage_cut.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "goblin/verify/graph_witnesses.hpp"
#include "kinds/graph/graph_cost.hpp"

namespace goblin::labnode {
namespace {

// What `steps` make of `whole`, each prefix of them made once per cache (a weight's column tiles
// share its slice of the parameters and its reshape).
Expected<net::TensorPtr> madeBy(const net::TensorPtr& whole, std::span<const plan::ViewStep> steps,
                                SliceCache& cache) {
    if (steps.empty())
        return whole;
    auto& slot = cache[{whole.get(), std::vector<plan::ViewStep>(steps.begin(), steps.end())}];
    if (slot.first)
        return slot.first;
    auto from = madeBy(whole, steps.first(steps.size() - 1), cache);
    if (!from)
        return tl::unexpected(from.error());
    auto next = reference::runOp(steps.back().op, std::span(from->get(), 1), steps.back().attrs);
    if (!next) // the graph validated with the tensor's shape: a bug
        return makeError(ErrorCode::Internal, "a lifted input: " + next.error().message);
    slot.first = std::make_shared<const core::Tensor>(std::move(*next));
    return slot.first;
}

// Input `source` of a lifted graph, from the range's inputs: whole, or made at the node by the
// source's slices, reshapes and permutes, with its digest when it is worth naming.
Expected<std::pair<net::TensorPtr, std::string>>
liftedInput(const GraphChunk& range, const plan::LiftedSource& source, SliceCache& cache) {
    const net::TensorPtr& whole = range.inputs.at(source.input);
    if (source.steps.empty() || !whole) // whole, or a plan request's (no tensor)
        return std::pair{whole, source.steps.empty() ? range.inputDigests.at(source.input)
                                                     : std::string()};
    auto made = madeBy(whole, source.steps, cache);
    if (!made)
        return tl::unexpected(made.error());
    auto& slot = cache.at({whole.get(), source.steps});
    if (slot.second.empty() && !range.inputDigests.at(source.input).empty() &&
        (*made)->byteSize() >= kMinNamedInputBytes)
        slot.second = net::tensorDigest(**made);
    return slot;
}

// The graph a range is cut from: with its trivial ends lifted (plan/lifted_ends.hpp) when the
// planner does so and the lifted graph validates; else the range's own.
struct CutSource {
    std::optional<plan::LiftedEnds> lifted;
    core::graph::GraphPlan liftedPlan;
    plan::TiledGraph tiled;
};

// A range left whole: why, and the biggest value a node of the graph it was cut from reads or
// makes (what no cut can split).
WhyWhole leftWhole(std::string reason, const core::graph::Graph& graph,
                   const core::graph::GraphPlan& plan) {
    WhyWhole why{std::move(reason), 0, {}};
    for (const core::graph::GraphNode& node : graph.nodes) {
        std::vector<core::graph::ValueId> values = node.args;
        values.push_back(node.id);
        for (core::graph::ValueId value : values)
            if (const std::int64_t bytes = plan::specBytes(plan.specs.at(value));
                bytes > why.bulkiestValueBytes) {
                why.bulkiestValueBytes = bytes;
                why.bulkiestValueNode = "node " + std::to_string(node.id) + " (" +
                                        std::string(core::ops::opInfo(node.op).name) + ")";
            }
    }
    return why;
}

// The matmul tiles a stage computes: its products the range's graph does not have.
std::int64_t tilesOf(const core::graph::Graph& stage, const std::set<core::graph::ValueId>& own) {
    return std::count_if(stage.nodes.begin(), stage.nodes.end(), [&](const auto& node) {
        return node.op == core::ops::OpCode::Matmul && !own.contains(node.id);
    });
}

// addStageChunks, with `lift`: the graph's ends are lifted first unless a stage would then take
// more inputs than a task carries.
Expected<WhyWhole> addStages(std::vector<GraphChunk>& chunks, const GraphChunk& range,
                             const StageBudget& budget, GraphVerification verification,
                             const core::graph::GraphLimits& limits, SliceCache& cache, bool lift) {
    CutSource source;
    if (lift && budget.planner >= 2) {
        // Planner 4: matmuls too big for a task cut into tiles first (plan/matmul_tiles.hpp).
        std::optional<core::graph::GraphPlan> tiledPlan;
        if (budget.planner >= 4) {
            source.tiled = plan::tileWideMatmuls(range.graph, range.plan, budget.bytes);
            if (source.tiled.tiledNodes > 0)
                if (auto valid = core::graph::validateGraph(source.tiled.graph, limits))
                    tiledPlan = std::move(*valid);
        }
        if (!tiledPlan)
            source.tiled.tiledNodes = 0;
        plan::LiftedEnds ends =
            tiledPlan ? plan::liftEnds(source.tiled.graph, *tiledPlan, {.throughViews = true})
                      : plan::liftEnds(range.graph, range.plan, {budget.planner >= 4});
        // Planner 4: the lifted graph is the node's own, never sent; its stages are validated
        // with the real limits. A model's many parameters may lift to more inputs than a graph
        // job may declare.
        core::graph::GraphLimits liftedLimits = limits;
        if (budget.planner >= 4)
            liftedLimits.maxInputs =
                std::max(limits.maxInputs, ends.graph.inputs.size() + ends.graph.constants.size());
        if (auto liftedPlan = core::graph::validateGraph(ends.graph, liftedLimits);
            (ends.changed || tiledPlan) && liftedPlan) {
            source.lifted = std::move(ends);
            source.liftedPlan = std::move(*liftedPlan);
        }
    }
    const core::graph::Graph& graph = source.lifted ? source.lifted->graph : range.graph;
    const core::graph::GraphPlan& graphPlan = source.lifted ? source.liftedPlan : range.plan;
    plan::CutRules rules;
    rules.measure =
        budget.planner >= 3 ? plan::StageMeasure::HeldAtOnce : plan::StageMeasure::EveryValue;
    if (budget.planner >= 2)
        for (const core::graph::GraphNode& node : graph.nodes)
            rules.nodeCosts.push_back(nodeFlops(node, graphPlan));
    if (budget.planner >= 3)
        rules.keptToEnd = witnessCandidates(graph, graphPlan);
    if (budget.planner >= 5) {
        rules.maxStageInputs = net::Limits{}.maxTensorsPerMessage;
        rules.maxStageInputsAndConstants = limits.maxInputs;
        rules.maxStageOutputs = net::Limits{}.maxTensorsPerMessage;
    }
    auto cut = plan::cutIntoStages(graph, graphPlan, budget.bytes, rules);
    if (!cut)
        return leftWhole(cut.error().message, graph, graphPlan);
    // One stage of the lifted graph is a task that fits where the range did not: the node slices
    // its inputs and joins its outputs. One stage of the range's own graph would be the range.
    if (cut->stages.size() < 2 && !source.lifted)
        return leftWhole("only one of its stages computes anything", graph, graphPlan);
    if (source.lifted &&
        std::any_of(cut->stages.begin(), cut->stages.end(), [&](const plan::GraphStage& stage) {
            return stage.graph.inputs.size() > net::Limits{}.maxTensorsPerMessage ||
                   stage.graph.outputs.size() > net::Limits{}.maxTensorsPerMessage ||
                   stage.graph.inputs.size() + stage.graph.constants.size() > limits.maxInputs;
        }))
        return addStages(chunks, range, budget, verification, limits, cache, false);
    const std::size_t first = chunks.size();
    std::set<core::graph::ValueId> ownNodes;
    for (const core::graph::GraphNode& node : range.graph.nodes)
        ownNodes.insert(node.id);
    std::vector<std::vector<std::size_t>> mergedAs(cut->stages.size());
    std::vector<std::vector<std::size_t>> mergedPart(cut->stages.size());
    for (std::size_t s = 0; s < cut->stages.size(); ++s) {
        mergedAs[s].assign(cut->stages[s].graph.outputs.size(), kNotMerged);
        mergedPart[s].assign(cut->stages[s].graph.outputs.size(), 0);
    }
    for (std::size_t o = 0; o < cut->outputs.size(); ++o) {
        const plan::OutputPlace& place = cut->outputs[o];
        mergedAs[place.stage][place.output] = source.lifted ? source.lifted->outputs[o].output : o;
        mergedPart[place.stage][place.output] = source.lifted ? source.lifted->outputs[o].part : 0;
    }
    for (std::size_t s = 0; s < cut->stages.size(); ++s) {
        plan::GraphStage& stage = cut->stages[s];
        GraphChunk chunk;
        chunk.graph = std::move(stage.graph);
        auto stagePlan = core::graph::validateGraph(chunk.graph, limits);
        if (!stagePlan)
            return makeError(ErrorCode::Internal,
                             "stage " + std::to_string(s) + ": " + stagePlan.error().message);
        chunk.plan = std::move(*stagePlan);
        chunk.offset = range.offset;
        chunk.range = range.range;
        chunk.stage = s;
        chunk.mergedAs = std::move(mergedAs[s]);
        chunk.mergedPart = std::move(mergedPart[s]);
        if (source.lifted)
            chunk.outputParts = source.lifted->parts;
        for (const plan::StageSource& from : stage.sources) {
            if (from.kind == plan::StageSource::Kind::GraphInput) {
                Expected<std::pair<net::TensorPtr, std::string>> given =
                    source.lifted
                        ? liftedInput(range, source.lifted->inputs.at(from.index), cache)
                        : std::pair{range.inputs.at(from.index), range.inputDigests.at(from.index)};
                if (!given)
                    return tl::unexpected(given.error());
                auto [tensor, digest] = std::move(*given);
                chunk.inputs.push_back(std::move(tensor));
                chunk.inputDigests.push_back(std::move(digest));
                chunk.boundary.emplace_back(std::nullopt);
                continue;
            }
            const std::size_t stageChunk = first + from.stage;
            chunk.inputs.push_back(nullptr);
            chunk.inputDigests.emplace_back();
            chunk.boundary.emplace_back(BoundarySource{stageChunk, from.output});
            if (std::find(chunk.dependsOn.begin(), chunk.dependsOn.end(), stageChunk) ==
                chunk.dependsOn.end())
                chunk.dependsOn.push_back(stageChunk);
        }
        finishChunk(chunk, verification, budget.planner);
        if (source.tiled.tiledNodes > 0) {
            chunk.tiledMatmuls = static_cast<std::int64_t>(source.tiled.tiledNodes);
            chunk.tiles = tilesOf(chunk.graph, ownNodes);
        }
        chunks.push_back(std::move(chunk));
    }
    return WhyWhole{};
}

} // namespace

std::vector<bool> witnessCandidates(const core::graph::Graph& graph,
                                    const core::graph::GraphPlan& plan) {
    std::vector<bool> heavy;
    for (const core::graph::GraphNode& node : graph.nodes)
        heavy.push_back(verify::isHeavyNode(node, plan));
    return heavy;
}

std::int64_t heldByTask(const core::graph::Graph& graph, const core::graph::GraphPlan& plan,
                        int planner) {
    return planner >= 3 ? plan::heldAtOnce(graph, plan, witnessCandidates(graph, plan))
                        : plan::graphValueBytes(plan);
}

void finishChunk(GraphChunk& chunk, GraphVerification verification, int planner) {
    if (chunk.mergedAs.empty())
        for (std::size_t o = 0; o < chunk.graph.outputs.size(); ++o)
            chunk.mergedAs.push_back(o);
    if (chunk.boundary.empty())
        chunk.boundary.resize(chunk.inputs.size());
    const bool canonical = verification == GraphVerification::Replicas && planner >= 6;
    chunk.witnesses = verify::addWitnessOutputs(
        chunk.graph, chunk.plan, net::Limits{}.maxTensorsPerMessage,
        canonical ? verify::kMinCheckedCanonicalInner : verify::kMinHeavyInner);
    if (verification == GraphVerification::Freivalds) {
        chunk.gemmNodes =
            verify::checkedGemmNodes(chunk.graph, chunk.plan, verify::GemmOps::MatmulAndConv2d);
        chunk.gemmNodesWithoutGradients = chunk.gemmNodes.size();
        for (std::int64_t id :
             verify::checkedGemmNodes(chunk.graph, chunk.plan, verify::GemmOps::WithConvGradients))
            if (std::ranges::find(chunk.gemmNodes, id) == chunk.gemmNodes.end())
                chunk.gemmNodes.push_back(id); // a gradient
    }
    chunk.json = core::graph::encodeGraph(chunk.graph);
    chunk.tolerances = verify::outputTolerances(chunk.graph, chunk.plan);
    chunk.peakBytes = heldByTask(chunk.graph, chunk.plan, planner);
    chunk.givenBytes = 0;
    for (const auto& input : chunk.graph.inputs)
        chunk.givenBytes += plan::specBytes(input.spec);
    for (const auto& constant : chunk.graph.constants)
        chunk.givenBytes += static_cast<std::int64_t>(constant.value.byteSize());
}

Expected<WhyWhole> addStageChunks(std::vector<GraphChunk>& chunks, const GraphChunk& range,
                                  const StageBudget& budget, GraphVerification verification,
                                  const core::graph::GraphLimits& limits, SliceCache& cache) {
    return addStages(chunks, range, budget, verification, limits, cache, true);
}

} // namespace goblin::labnode
