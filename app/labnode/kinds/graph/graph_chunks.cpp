#include "kinds/graph/graph_chunks.hpp"

#include <algorithm>
#include <limits>
#include <variant>

#include "goblin/net/content_digest.hpp"
#include "goblin/plan/chunk_shapes.hpp"
#include "goblin/plan/stage_cut.hpp"
#include "goblin/plan/tensor_slices.hpp"
#include "kinds/graph/stage_chunks.hpp"

namespace goblin::labnode {
namespace {

using core::ops::OpCode;

// A batch range's chunk: whole, or cut into stages when it holds more than the budget.
Expected<void> addRange(std::vector<GraphChunk>& chunks, GraphChunk range,
                        const StageBudget& budget, GraphVerification verification,
                        const core::graph::GraphLimits& limits, SliceCache& cache) {
    if (range.inputDigests.empty())
        range.inputDigests.resize(range.inputs.size());
    if (budget.bytes > 0 && heldByTask(range.graph, range.plan, budget.planner) > budget.bytes) {
        auto whyNot = addStageChunks(chunks, range, budget, verification, limits, cache);
        if (!whyNot)
            return tl::unexpected(whyNot.error());
        if (whyNot->reason.empty())
            return {};
        range.whyWhole = "it cannot be cut into stages of " + std::to_string(budget.bytes) +
                         " bytes: " + whyNot->reason;
        range.bulkiestValueBytes = whyNot->bulkiestValueBytes;
        range.bulkiestValueNode = whyNot->bulkiestValueNode;
    }
    finishChunk(range, verification, budget.planner);
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
    SliceCache cache;
    const GraphVerification verification = submission.verification;
    if (!submission.batch) {
        GraphChunk whole;
        whole.graph = submission.graph;
        whole.plan = submission.plan;
        whole.inputs = submission.inputs;
        if (auto ok = addRange(result, std::move(whole), stageBudget, verification, limits, cache);
            !ok)
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
            if (auto ok =
                    addRange(result, std::move(chunk), stageBudget, verification, limits, cache);
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
        if (auto ok = addRange(result, std::move(chunk), stageBudget, verification, limits, cache);
            !ok)
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

} // namespace goblin::labnode
