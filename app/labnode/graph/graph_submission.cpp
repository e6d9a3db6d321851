#include "graph_submission.hpp"

#include <string>

#include <boost/json.hpp>

#include "goblin/core/graph/graph_json.hpp"
#include "goblin/net/json_fields.hpp"

namespace goblin::labnode {
namespace {

namespace json = boost::json;

Expected<int> normaliseDim(std::int64_t dim, std::size_t rank, const std::string& what) {
    const auto r = static_cast<std::int64_t>(rank);
    if (dim < -r || dim >= r)
        return makeError(ErrorCode::InvalidInput, what + ": batch dim " + std::to_string(dim) +
                                                      " is outside rank " + std::to_string(rank));
    return static_cast<int>(dim < 0 ? dim + r : dim);
}

Expected<BatchSplit> parseBatch(const json::object& batch, const GraphSubmission& submission) {
    const auto* inputs = batch.if_contains("inputs");
    const auto* outputs = batch.if_contains("outputs");
    if (!inputs || !inputs->is_array() || !outputs || !outputs->is_array())
        return makeError(ErrorCode::InvalidInput, "batch needs 'inputs' and 'outputs' lists");
    const auto& graph = submission.graph;
    if (inputs->get_array().size() != graph.inputs.size() ||
        outputs->get_array().size() != graph.outputs.size())
        return makeError(ErrorCode::InvalidInput,
                         "batch 'inputs' and 'outputs' need one entry per graph input and output");
    BatchSplit split;
    split.size = -1;
    for (std::size_t i = 0; i < graph.inputs.size(); ++i) {
        const json::value& entry = inputs->get_array()[i];
        if (entry.is_null()) {
            split.inputDims.push_back(std::nullopt);
            continue;
        }
        if (!entry.is_int64())
            return makeError(ErrorCode::InvalidInput, "batch input dims are integers or null");
        const auto& shape = graph.inputs[i].spec.shape;
        auto dim = normaliseDim(entry.get_int64(), shape.size(), "input " + std::to_string(i));
        if (!dim)
            return tl::unexpected(dim.error());
        if (split.size >= 0 && shape[*dim] != split.size)
            return makeError(ErrorCode::ShapeMismatch,
                             "input " + std::to_string(i) + " has batch size " +
                                 std::to_string(shape[*dim]) + ", another marked input has " +
                                 std::to_string(split.size));
        split.size = shape[*dim];
        split.inputDims.push_back(*dim);
    }
    if (split.size < 0)
        return makeError(ErrorCode::InvalidInput, "batch marks no input");
    if (split.size == 0)
        return makeError(ErrorCode::InvalidInput, "the batch is empty");
    for (std::size_t o = 0; o < graph.outputs.size(); ++o) {
        const json::value& entry = outputs->get_array()[o];
        if (!entry.is_int64())
            return makeError(ErrorCode::InvalidInput, "batch output dims are integers");
        const auto& shape = submission.plan.specs.at(graph.outputs[o]).shape;
        auto dim = normaliseDim(entry.get_int64(), shape.size(), "output " + std::to_string(o));
        if (!dim)
            return tl::unexpected(dim.error());
        if (shape[*dim] != split.size)
            return makeError(ErrorCode::ShapeMismatch,
                             "output " + std::to_string(o) + " has " + std::to_string(shape[*dim]) +
                                 " rows along its batch dim, the batch has " +
                                 std::to_string(split.size));
        split.outputDims.push_back(*dim);
    }
    if (const auto* chunks = batch.if_contains("chunks"); chunks && !chunks->is_null()) {
        if (!chunks->is_int64() || chunks->get_int64() < 1 || chunks->get_int64() > kMaxGraphChunks)
            return makeError(ErrorCode::InvalidInput,
                             "batch 'chunks' must be an integer from 1 to " +
                                 std::to_string(kMaxGraphChunks));
        split.chunks = std::min(chunks->get_int64(), split.size);
    }
    return split;
}

} // namespace

Expected<GraphSubmission> parseGraphSubmission(const net::Message& message,
                                               const core::graph::GraphLimits& limits) {
    const json::value* graphJson = message.control.if_contains("graph");
    if (!graphJson || !graphJson->is_object())
        return makeError(ErrorCode::InvalidInput, "submit_graph needs a 'graph' object");
    auto graph = core::graph::decodeGraph(json::serialize(*graphJson), limits);
    if (!graph)
        return tl::unexpected(graph.error());
    auto plan = core::graph::validateGraph(*graph, limits);
    if (!plan)
        return tl::unexpected(plan.error());
    GraphSubmission submission{std::move(*graph), std::move(*plan), message.tensors, std::nullopt};
    const auto& inputs = submission.graph.inputs;
    if (submission.inputs.size() != inputs.size())
        return makeError(ErrorCode::InvalidInput,
                         "the graph has " + std::to_string(inputs.size()) + " input(s), " +
                             std::to_string(submission.inputs.size()) + " tensor(s) came");
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const core::Tensor& tensor = *submission.inputs[i];
        if (tensor.dtype() != inputs[i].spec.dtype)
            return makeError(ErrorCode::UnsupportedDtype,
                             "input " + std::to_string(i) + " is " +
                                 std::string(core::wireName(tensor.dtype())) +
                                 ", the graph declares " +
                                 std::string(core::wireName(inputs[i].spec.dtype)));
        if (tensor.shape() != inputs[i].spec.shape)
            return makeError(ErrorCode::ShapeMismatch,
                             "input " + std::to_string(i) + " does not have the declared shape");
    }
    if (const auto* batch = message.control.if_contains("batch"); batch && !batch->is_null()) {
        if (!batch->is_object())
            return makeError(ErrorCode::InvalidInput, "'batch' must be an object");
        auto split = parseBatch(batch->get_object(), submission);
        if (!split)
            return tl::unexpected(split.error());
        submission.batch = std::move(*split);
    }
    return submission;
}

std::vector<core::Tensor> valuesOf(const std::vector<net::TensorPtr>& tensors) {
    std::vector<core::Tensor> values;
    values.reserve(tensors.size());
    for (const auto& tensor : tensors)
        values.push_back(*tensor); // shares the storage
    return values;
}

} // namespace goblin::labnode
