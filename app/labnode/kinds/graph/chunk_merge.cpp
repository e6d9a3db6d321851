#include <algorithm>
#include <optional>
#include <string>

#include "goblin/plan/tensor_slices.hpp"
#include "goblin/plan/tensor_sums.hpp"
#include "kinds/graph/graph_chunks.hpp"

// mergeChunkOutputs (graph_chunks.hpp): a job's outputs from its chunks' accepted outputs.
namespace goblin::labnode {
namespace {

// An output of a range from its parts, concatenated along their dim (the concat the cut lifted
// out of the graph: the same bits).
Expected<core::Tensor> joinedParts(const std::vector<std::optional<core::Tensor>>& parts,
                                   const plan::OutputParts& wanted) {
    if (parts.size() != wanted.parts ||
        std::any_of(parts.begin(), parts.end(), [](const auto& part) { return !part; }))
        return makeError(ErrorCode::Internal, "no chunk computes an output of the graph");
    if (parts.size() == 1)
        return *parts.front();
    core::Shape shape = parts.front()->shape();
    const auto dim = static_cast<std::size_t>(wanted.dim);
    if (dim >= shape.size())
        return makeError(ErrorCode::Internal, "an output's parts do not have its dim");
    shape[dim] = 0;
    for (const auto& part : parts)
        shape[dim] += part->shape().at(dim);
    auto whole = core::Tensor::allocate(parts.front()->dtype(), shape);
    if (!whole)
        return tl::unexpected(whole.error());
    std::int64_t offset = 0;
    for (const auto& part : parts) {
        if (auto placed = plan::placeAlong(*whole, *part, wanted.dim, offset); !placed)
            return tl::unexpected(placed.error());
        offset += part->shape().at(dim);
    }
    return whole;
}

} // namespace

Expected<std::vector<core::Tensor>>
mergeChunkOutputs(const GraphSubmission& submission, const std::vector<GraphChunk>& chunks,
                  const std::vector<std::vector<core::Tensor>>& chunkOutputs) {
    // The researcher's outputs of each range, gathered from its stages (in parts, when the cut
    // lifted an output's concat).
    const std::size_t researcherOutputs = submission.graph.outputs.size();
    using Parts = std::vector<std::optional<core::Tensor>>;
    std::vector<std::vector<Parts>> gathered(rangeCount(chunks),
                                             std::vector<Parts>(researcherOutputs));
    std::vector<std::vector<plan::OutputParts>> partsOf(gathered.size());
    std::vector<std::int64_t> offsets(gathered.size(), 0);
    if (chunkOutputs.size() != chunks.size())
        return makeError(ErrorCode::Internal, "the outputs do not match the chunks");
    for (std::size_t c = 0; c < chunks.size(); ++c) {
        const GraphChunk& chunk = chunks[c];
        offsets.at(chunk.range) = chunk.offset;
        if (chunkOutputs[c].size() < chunk.mergedAs.size())
            return makeError(ErrorCode::Internal, "a chunk has fewer outputs than it keeps");
        if (!chunk.outputParts.empty())
            partsOf.at(chunk.range) = chunk.outputParts;
        for (std::size_t k = 0; k < chunk.mergedAs.size(); ++k) {
            if (chunk.mergedAs[k] == kNotMerged)
                continue;
            Parts& parts = gathered.at(chunk.range).at(chunk.mergedAs[k]);
            const std::size_t part = chunk.mergedPart.empty() ? 0 : chunk.mergedPart.at(k);
            if (parts.size() <= part)
                parts.resize(part + 1);
            parts[part] = chunkOutputs[c][k];
        }
    }
    std::vector<std::vector<core::Tensor>> outputs(gathered.size());
    for (std::size_t r = 0; r < gathered.size(); ++r)
        for (std::size_t o = 0; o < researcherOutputs; ++o) {
            const plan::OutputParts wanted =
                partsOf[r].empty() ? plan::OutputParts{} : partsOf[r].at(o);
            auto output = joinedParts(gathered[r][o], wanted);
            if (!output)
                return tl::unexpected(output.error());
            outputs[r].push_back(std::move(*output));
        }
    if (!submission.batch)
        return std::move(outputs.at(0));
    const BatchSplit& batch = *submission.batch;
    const auto rowsOf = [&](std::size_t r) {
        return (r + 1 < offsets.size() ? offsets[r + 1] : batch.size) - offsets[r];
    };
    std::vector<core::Tensor> merged;
    for (std::size_t o = 0; o < submission.graph.outputs.size(); ++o) {
        const auto& spec = submission.plan.specs.at(submission.graph.outputs[o]);
        const OutputMerge& merge = batch.outputs[o];
        if (merge.kind != OutputMerge::Kind::Concat) {
            std::vector<core::Tensor> parts;
            std::vector<double> weights;
            for (std::size_t r = 0; r < outputs.size(); ++r) {
                parts.push_back(outputs[r].at(o));
                weights.push_back(merge.kind == OutputMerge::Kind::Sum
                                      ? 1.0
                                      : static_cast<double>(rowsOf(r)) /
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
            // Each range fills its own rows, all of them: none is left unwritten or overwritten.
            const core::Shape& part = outputs[r].at(o).shape();
            const auto dim = static_cast<std::size_t>(merge.dim);
            if (part.size() != shape.size() || part[dim] != rowsOf(r))
                return makeError(ErrorCode::ShapeMismatch,
                                 "output " + std::to_string(o) + " of the rows from " +
                                     std::to_string(offsets[r]) + " has " +
                                     (part.size() > dim ? std::to_string(part[dim]) : "no") +
                                     " rows along dim " + std::to_string(merge.dim) + ", not " +
                                     std::to_string(rowsOf(r)));
            auto ok = plan::placeAlong(*whole, outputs[r].at(o), merge.dim, offsets[r]);
            if (!ok)
                return tl::unexpected(ok.error());
        }
        merged.push_back(std::move(*whole));
    }
    return merged;
}

} // namespace goblin::labnode
