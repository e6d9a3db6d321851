#include "kinds/graph/graph_chunks.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <variant>

#include "goblin/core/graph/graph_json.hpp"
#include "goblin/net/content_digest.hpp"
#include "goblin/net/limits.hpp"
#include "goblin/plan/chunk_shapes.hpp"
#include "goblin/plan/stage_cut.hpp"
#include "goblin/plan/tensor_slices.hpp"
#include "goblin/plan/tensor_sums.hpp"
#include "goblin/verify/graph_witnesses.hpp"
#include "kinds/graph/graph_cost.hpp"

namespace goblin::labnode {
namespace {

using core::ops::OpCode;

// What every chunk's graph gets once its plan is known: witnesses, then what depends on outputs.
void finishChunk(GraphChunk& chunk, GraphVerification verification) {
    if (chunk.mergedAs.empty())
        for (std::size_t o = 0; o < chunk.graph.outputs.size(); ++o)
            chunk.mergedAs.push_back(o);
    if (chunk.boundary.empty())
        chunk.boundary.resize(chunk.inputs.size());
    chunk.witnesses =
        verify::addWitnessOutputs(chunk.graph, chunk.plan, net::Limits{}.maxTensorsPerMessage);
    if (verification == GraphVerification::Freivalds)
        chunk.gemmNodes = verify::checkedGemmNodes(chunk.graph, chunk.plan);
    chunk.json = core::graph::encodeGraph(chunk.graph);
    chunk.tolerances = verify::outputTolerances(chunk.graph, chunk.plan);
    chunk.peakBytes = plan::graphValueBytes(chunk.plan);
}

// The stages of a batch range (its graph, plan and inputs in `range`) as chunks appended to
// `chunks`; why not, leaving `chunks` as it was, when the range cannot be cut.
Expected<std::string> addStages(std::vector<GraphChunk>& chunks, const GraphChunk& range,
                                const StageBudget& budget, GraphVerification verification,
                                const core::graph::GraphLimits& limits) {
    std::vector<double> costs;
    if (budget.balanced)
        for (std::size_t position : range.plan.order)
            costs.push_back(nodeFlops(range.graph.nodes[position], range.plan));
    auto cut = plan::cutIntoStages(range.graph, range.plan, budget.bytes, costs);
    if (!cut)
        return cut.error().message;
    if (cut->stages.size() < 2)
        return std::string("only one of its stages computes anything");
    const std::size_t first = chunks.size();
    std::vector<std::vector<std::size_t>> mergedAs(cut->stages.size());
    for (std::size_t s = 0; s < cut->stages.size(); ++s)
        mergedAs[s].assign(cut->stages[s].graph.outputs.size(), kNotMerged);
    for (std::size_t o = 0; o < cut->outputs.size(); ++o)
        mergedAs[cut->outputs[o].stage][cut->outputs[o].output] = o;
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
        for (const plan::StageSource& source : stage.sources) {
            if (source.kind == plan::StageSource::Kind::GraphInput) {
                chunk.inputs.push_back(range.inputs.at(source.index));
                chunk.inputDigests.push_back(range.inputDigests.at(source.index));
                chunk.boundary.emplace_back(std::nullopt);
                continue;
            }
            const std::size_t from = first + source.stage;
            chunk.inputs.push_back(nullptr);
            chunk.inputDigests.emplace_back();
            chunk.boundary.emplace_back(BoundarySource{from, source.output});
            if (std::find(chunk.dependsOn.begin(), chunk.dependsOn.end(), from) ==
                chunk.dependsOn.end())
                chunk.dependsOn.push_back(from);
        }
        finishChunk(chunk, verification);
        chunks.push_back(std::move(chunk));
    }
    return std::string();
}

// A batch range's chunk: whole, or cut into stages when it holds more than the budget.
Expected<void> addRange(std::vector<GraphChunk>& chunks, GraphChunk range,
                        const StageBudget& budget, GraphVerification verification,
                        const core::graph::GraphLimits& limits) {
    if (range.inputDigests.empty())
        range.inputDigests.resize(range.inputs.size());
    if (budget.bytes > 0 && plan::graphValueBytes(range.plan) > budget.bytes) {
        auto whyNot = addStages(chunks, range, budget, verification, limits);
        if (!whyNot)
            return tl::unexpected(whyNot.error());
        if (whyNot->empty())
            return {};
        range.whyWhole = "it cannot be cut into stages of " + std::to_string(budget.bytes) +
                         " bytes: " + *whyNot;
    }
    finishChunk(range, verification);
    chunks.push_back(std::move(range));
    return {};
}

// The digests of the inputs every chunk gets whole (`splitDims[i]` nullopt).
std::vector<std::string> wholeInputDigests(const std::vector<net::TensorPtr>& inputs,
                                           const std::vector<std::optional<int>>& splitDims) {
    std::vector<std::string> digests(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i)
        if (!splitDims.at(i) && inputs[i] && inputs[i]->byteSize() >= kMinNamedInputBytes)
            digests[i] = net::tensorDigest(*inputs[i]);
    return digests;
}

// Micro-batch `c` of a graph whose dropout masks draw `drawn` numbers in all: every mask's stream
// starts c·drawn further on, so each micro-batch gets fresh masks while both replicas of it draw
// the same ones (docs/training.md, "Dropout").
Expected<void> offsetDropoutStreams(core::graph::Graph& graph, std::int64_t c) {
    std::int64_t drawn = 0;
    for (const auto& node : graph.nodes)
        if (node.op == OpCode::DropoutMask) {
            std::int64_t count = 1;
            for (std::int64_t dim : std::get<core::ops::IntList>(node.attrs.at("shape")))
                count *= dim;
            drawn += count;
        }
    if (drawn == 0 || c == 0)
        return {};
    for (auto& node : graph.nodes)
        if (node.op == OpCode::DropoutMask) {
            const auto offset = node.attrs.find("offset");
            const std::int64_t base =
                offset == node.attrs.end() ? 0 : std::get<std::int64_t>(offset->second);
            if (base > std::numeric_limits<std::int64_t>::max() - c * drawn)
                return makeError(ErrorCode::InvalidInput,
                                 "a dropout_mask offset leaves no room for the micro-batches' "
                                 "streams (keep offsets below 2^62)");
            node.attrs["offset"] = base + c * drawn;
        }
    return {};
}

} // namespace

Expected<std::vector<GraphChunk>> splitIntoChunks(const GraphSubmission& submission,
                                                  std::int64_t chunks,
                                                  const core::graph::GraphLimits& limits,
                                                  const StageBudget& stageBudget) {
    std::vector<GraphChunk> result;
    const GraphVerification verification = submission.verification;
    if (!submission.batch) {
        GraphChunk whole;
        whole.graph = submission.graph;
        whole.plan = submission.plan;
        whole.inputs = submission.inputs;
        if (auto ok = addRange(result, std::move(whole), stageBudget, verification, limits); !ok)
            return tl::unexpected(ok.error());
        return result;
    }
    const BatchSplit& batch = *submission.batch;
    const std::int64_t count =
        batch.microBatch > 0
            ? batch.size / batch.microBatch
            : std::clamp<std::int64_t>(batch.chunks > 0 ? batch.chunks : chunks, 1, batch.size);
    // Only inputs several tasks share are worth naming (one task goes to different volunteers).
    const std::vector<std::string> digests =
        count > 1 ? wholeInputDigests(submission.inputs, batch.inputDims)
                  : std::vector<std::string>(submission.inputs.size());
    for (std::int64_t c = 0; c < count; ++c) {
        const std::int64_t begin = batch.size * c / count;
        const std::int64_t rows = batch.size * (c + 1) / count - begin;
        GraphChunk chunk;
        chunk.graph = submission.graph;
        chunk.offset = begin;
        chunk.range = static_cast<std::size_t>(c);
        chunk.inputDigests = digests;
        for (std::size_t i = 0; i < submission.inputs.size(); ++i) {
            const auto& dim = batch.inputDims[i];
            if (!dim || !submission.inputs[i]) { // whole, or a plan request's (no tensor)
                if (dim)
                    chunk.graph.inputs[i].spec.shape[*dim] = rows;
                chunk.inputs.push_back(submission.inputs[i]);
                continue;
            }
            auto part = plan::sliceAlong(*submission.inputs[i], *dim, begin, rows);
            if (!part)
                return tl::unexpected(part.error());
            chunk.graph.inputs[i].spec.shape[*dim] = rows;
            chunk.inputs.push_back(std::make_shared<const core::Tensor>(std::move(*part)));
        }
        if (batch.microBatch > 0) { // the graph is already written for these rows
            if (auto ok = offsetDropoutStreams(chunk.graph, c); !ok)
                return tl::unexpected(ok.error());
            chunk.plan = submission.plan;
            if (auto ok = addRange(result, std::move(chunk), stageBudget, verification, limits);
                !ok)
                return tl::unexpected(ok.error());
            continue;
        }
        auto adapted = plan::adaptShapeTargets(chunk.graph, submission.plan, batch.size, rows);
        auto plan = adapted ? core::graph::validateGraph(chunk.graph, limits)
                            : Expected<core::graph::GraphPlan>(tl::unexpected(adapted.error()));
        if (!plan)
            return makeError(plan.error().code, "rows " + std::to_string(begin) + ".." +
                                                    std::to_string(begin + rows) +
                                                    " of the batch: " + plan.error().message);
        for (std::size_t o = 0; o < chunk.graph.outputs.size(); ++o) {
            core::Shape expected = submission.plan.specs.at(submission.graph.outputs[o]).shape;
            const OutputMerge& merge = batch.outputs[o];
            if (merge.kind == OutputMerge::Kind::Concat)
                expected[static_cast<std::size_t>(merge.dim)] = rows;
            if (plan->specs.at(chunk.graph.outputs[o]).shape != expected)
                return makeError(ErrorCode::ShapeMismatch,
                                 merge.kind == OutputMerge::Kind::Concat
                                     ? "the graph does not split along the marked batch dims: "
                                       "output " +
                                           std::to_string(o) + " of a chunk of " +
                                           std::to_string(rows) + " rows does not have " +
                                           std::to_string(rows) + " rows along its batch dim"
                                     : "output " + std::to_string(o) +
                                           " changes shape with the rows of a chunk; a summed or "
                                           "averaged output keeps its shape");
        }
        chunk.plan = std::move(*plan);
        if (auto ok = addRange(result, std::move(chunk), stageBudget, verification, limits); !ok)
            return tl::unexpected(ok.error());
    }
    return result;
}

std::size_t rangeCount(const std::vector<GraphChunk>& chunks) {
    return chunks.empty() ? 0 : chunks.back().range + 1;
}

std::string describeTasks(const std::vector<GraphChunk>& chunks) {
    const std::size_t ranges = rangeCount(chunks);
    std::string text = std::to_string(chunks.size()) + " task(s)";
    if (chunks.size() > ranges)
        text += " (" + std::to_string(ranges) +
                " batch range(s) cut into stages that fit the volunteers' memory)";
    return text;
}

Expected<void>
fillBoundaryInputs(GraphChunk& chunk,
                   const std::function<const std::vector<core::Tensor>*(std::size_t)>& outputsOf) {
    for (std::size_t i = 0; i < chunk.inputs.size(); ++i) {
        const std::optional<BoundarySource>& source = chunk.boundary.at(i);
        if (!source)
            continue;
        const std::vector<core::Tensor>* outputs = outputsOf(source->chunk);
        if (!outputs || source->output >= outputs->size())
            return makeError(ErrorCode::Internal, "stage " + std::to_string(chunk.stage) +
                                                      " lacks an output of the stage before it");
        const core::Tensor& value = (*outputs)[source->output];
        const auto& spec = chunk.graph.inputs.at(i).spec;
        if (value.dtype() != spec.dtype || value.shape() != spec.shape)
            return makeError(ErrorCode::Internal, "a stage's boundary value has the wrong shape");
        chunk.inputs[i] = std::make_shared<const core::Tensor>(value);
    }
    return {};
}

Expected<std::vector<core::Tensor>>
mergeChunkOutputs(const GraphSubmission& submission, const std::vector<GraphChunk>& chunks,
                  const std::vector<std::vector<core::Tensor>>& chunkOutputs) {
    // The researcher's outputs of each range, gathered from its stages.
    const std::size_t researcherOutputs = submission.graph.outputs.size();
    std::vector<std::vector<std::optional<core::Tensor>>> gathered(
        rangeCount(chunks), std::vector<std::optional<core::Tensor>>(researcherOutputs));
    std::vector<std::int64_t> offsets(gathered.size(), 0);
    if (chunkOutputs.size() != chunks.size())
        return makeError(ErrorCode::Internal, "the outputs do not match the chunks");
    for (std::size_t c = 0; c < chunks.size(); ++c) {
        const GraphChunk& chunk = chunks[c];
        offsets.at(chunk.range) = chunk.offset;
        if (chunkOutputs[c].size() < chunk.mergedAs.size())
            return makeError(ErrorCode::Internal, "a chunk has fewer outputs than it keeps");
        for (std::size_t k = 0; k < chunk.mergedAs.size(); ++k)
            if (chunk.mergedAs[k] != kNotMerged)
                gathered.at(chunk.range).at(chunk.mergedAs[k]) = chunkOutputs[c][k];
    }
    std::vector<std::vector<core::Tensor>> outputs(gathered.size());
    for (std::size_t r = 0; r < gathered.size(); ++r)
        for (std::optional<core::Tensor>& output : gathered[r]) {
            if (!output)
                return makeError(ErrorCode::Internal, "no chunk computes an output of the graph");
            outputs[r].push_back(std::move(*output));
        }
    if (!submission.batch)
        return std::move(outputs.at(0));
    const BatchSplit& batch = *submission.batch;
    std::vector<core::Tensor> merged;
    for (std::size_t o = 0; o < submission.graph.outputs.size(); ++o) {
        const auto& spec = submission.plan.specs.at(submission.graph.outputs[o]);
        const OutputMerge& merge = batch.outputs[o];
        if (merge.kind != OutputMerge::Kind::Concat) {
            std::vector<core::Tensor> parts;
            std::vector<double> weights;
            for (std::size_t r = 0; r < outputs.size(); ++r) {
                parts.push_back(outputs[r].at(o));
                const std::int64_t end = r + 1 < offsets.size() ? offsets[r + 1] : batch.size;
                weights.push_back(merge.kind == OutputMerge::Kind::Sum
                                      ? 1.0
                                      : static_cast<double>(end - offsets[r]) /
                                            static_cast<double>(batch.size));
            }
            auto combined = plan::weightedSum(parts, weights);
            if (!combined)
                return tl::unexpected(combined.error());
            merged.push_back(std::move(*combined));
            continue;
        }
        core::Shape shape = spec.shape; // with a micro-batch, the shape of one chunk's output
        shape[static_cast<std::size_t>(merge.dim)] = batch.size;
        auto whole = core::Tensor::allocate(spec.dtype, shape);
        if (!whole)
            return tl::unexpected(whole.error());
        for (std::size_t r = 0; r < outputs.size(); ++r) {
            auto ok = plan::placeAlong(*whole, outputs[r].at(o), merge.dim, offsets[r]);
            if (!ok)
                return tl::unexpected(ok.error());
        }
        merged.push_back(std::move(*whole));
    }
    return merged;
}

} // namespace goblin::labnode
