#include "kinds/graph/graph_chunks.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <variant>

#include "goblin/core/graph/graph_json.hpp"
#include "goblin/net/content_digest.hpp"
#include "goblin/net/limits.hpp"
#include "goblin/plan/chunk_shapes.hpp"
#include "goblin/plan/tensor_slices.hpp"
#include "goblin/plan/tensor_sums.hpp"
#include "goblin/verify/graph_witnesses.hpp"

namespace goblin::labnode {
namespace {

using core::ops::OpCode;

std::int64_t peakBytesOf(const core::graph::GraphPlan& plan) {
    std::int64_t total = 0;
    for (const auto& [id, spec] : plan.specs)
        total += static_cast<std::int64_t>(core::byteSize(spec.dtype, spec.shape).value_or(0));
    return total;
}

// What every chunk's graph gets once its plan is known: witnesses, then what depends on outputs.
void finishChunk(GraphChunk& chunk, GraphVerification verification) {
    chunk.witnesses =
        verify::addWitnessOutputs(chunk.graph, chunk.plan, net::Limits{}.maxTensorsPerMessage);
    if (verification == GraphVerification::Freivalds)
        chunk.gemmNodes = verify::checkedGemmNodes(chunk.graph, chunk.plan);
    chunk.json = core::graph::encodeGraph(chunk.graph);
    chunk.tolerances = verify::outputTolerances(chunk.graph, chunk.plan);
    chunk.peakBytes = peakBytesOf(chunk.plan);
}

// The digests of the inputs every chunk gets whole (`splitDims[i]` nullopt).
std::vector<std::string> wholeInputDigests(const std::vector<net::TensorPtr>& inputs,
                                           const std::vector<std::optional<int>>& splitDims) {
    std::vector<std::string> digests(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i)
        if (!splitDims.at(i) && inputs[i]->byteSize() >= kMinNamedInputBytes)
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
                                                  const core::graph::GraphLimits& limits) {
    std::vector<GraphChunk> result;
    if (!submission.batch) {
        GraphChunk whole;
        whole.graph = submission.graph;
        whole.plan = submission.plan;
        whole.inputs = submission.inputs;
        finishChunk(whole, submission.verification);
        result.push_back(std::move(whole));
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
        chunk.inputDigests = digests;
        for (std::size_t i = 0; i < submission.inputs.size(); ++i) {
            const auto& dim = batch.inputDims[i];
            if (!dim) {
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
            finishChunk(chunk, submission.verification);
            result.push_back(std::move(chunk));
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
        finishChunk(chunk, submission.verification);
        result.push_back(std::move(chunk));
    }
    return result;
}

Expected<std::vector<core::Tensor>>
mergeChunkOutputs(const GraphSubmission& submission, const std::vector<GraphChunk>& chunks,
                  const std::vector<std::vector<core::Tensor>>& outputs) {
    const std::size_t researcherOutputs = submission.graph.outputs.size();
    if (!submission.batch) {
        const std::vector<core::Tensor>& only = outputs.at(0);
        if (only.size() < researcherOutputs)
            return makeError(ErrorCode::Internal, "a chunk has fewer outputs than the graph");
        return std::vector<core::Tensor>(
            only.begin(), only.begin() + static_cast<std::ptrdiff_t>(researcherOutputs));
    }
    const BatchSplit& batch = *submission.batch;
    std::vector<core::Tensor> merged;
    for (std::size_t o = 0; o < submission.graph.outputs.size(); ++o) {
        const auto& spec = submission.plan.specs.at(submission.graph.outputs[o]);
        const OutputMerge& merge = batch.outputs[o];
        if (merge.kind != OutputMerge::Kind::Concat) {
            std::vector<core::Tensor> parts;
            std::vector<double> weights;
            for (std::size_t c = 0; c < chunks.size(); ++c) {
                parts.push_back(outputs.at(c).at(o));
                const std::int64_t end = c + 1 < chunks.size() ? chunks[c + 1].offset : batch.size;
                weights.push_back(merge.kind == OutputMerge::Kind::Sum
                                      ? 1.0
                                      : static_cast<double>(end - chunks[c].offset) /
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
        for (std::size_t c = 0; c < chunks.size(); ++c) {
            auto ok = plan::placeAlong(*whole, outputs.at(c).at(o), merge.dim, chunks[c].offset);
            if (!ok)
                return tl::unexpected(ok.error());
        }
        merged.push_back(std::move(*whole));
    }
    return merged;
}

} // namespace goblin::labnode
