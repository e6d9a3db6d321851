#include "kinds/graph/graph_submission.hpp"

#include <optional>
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

std::string inputName(std::size_t i) {
    return "input " + std::to_string(i);
}

Expected<std::int64_t> parseMicroBatch(const json::object& batch) {
    const auto* micro = batch.if_contains("micro_batch");
    if (!micro || micro->is_null())
        return 0;
    if (!micro->is_int64() || micro->get_int64() < 1)
        return makeError(ErrorCode::InvalidInput, "batch 'micro_batch' must be a positive integer");
    return micro->get_int64();
}

// A marked input's batch size: the declared one, or with a micro-batch the rows it carries (a
// multiple of the micro-batch the graph declares). Every other dim is checked in
// parseGraphSubmission.
Expected<std::int64_t> markedRows(const GraphSubmission& submission, std::size_t i, int dim,
                                  std::int64_t microBatch, std::optional<std::int64_t> planned) {
    const std::int64_t declared = submission.graph.inputs[i].spec.shape[dim];
    if (microBatch == 0)
        return declared;
    if (declared != microBatch)
        return makeError(ErrorCode::ShapeMismatch,
                         inputName(i) + " declares " + std::to_string(declared) +
                             " rows along its batch dim, the micro-batch is " +
                             std::to_string(microBatch));
    std::int64_t rows = planned.value_or(declared);
    if (const net::TensorPtr& tensor = submission.inputs[i]) {
        const core::Shape& shape = tensor->shape();
        if (shape.size() != submission.graph.inputs[i].spec.shape.size())
            return makeError(ErrorCode::ShapeMismatch,
                             inputName(i) + " does not have the declared rank");
        rows = shape[static_cast<std::size_t>(dim)];
    }
    if (rows == 0 || rows % microBatch != 0)
        return makeError(ErrorCode::ShapeMismatch,
                         inputName(i) + " carries " + std::to_string(rows) +
                             " rows, not a positive multiple of the micro-batch " +
                             std::to_string(microBatch));
    return rows;
}

Expected<OutputMerge> parseOutputMerge(const json::value& entry, std::size_t o,
                                       const core::ops::TensorSpec& spec, std::int64_t rows) {
    const std::string what = "output " + std::to_string(o);
    if (entry.is_string()) {
        const std::string_view name = entry.get_string();
        if (name != "sum" && name != "mean")
            return makeError(ErrorCode::InvalidInput,
                             "batch outputs are dims, \"sum\" or \"mean\", not \"" +
                                 std::string(name) + "\"");
        if (!core::isFloatingPoint(spec.dtype))
            return makeError(ErrorCode::UnsupportedDtype,
                             what + " is " + std::string(core::wireName(spec.dtype)) + "; only " +
                                 "floating-point outputs can be summed or averaged");
        return OutputMerge{name == "sum" ? OutputMerge::Kind::Sum : OutputMerge::Kind::Mean, 0};
    }
    if (!entry.is_int64())
        return makeError(ErrorCode::InvalidInput,
                         "batch output entries are integers, \"sum\" or \"mean\"");
    auto dim = normaliseDim(entry.get_int64(), spec.shape.size(), what);
    if (!dim)
        return tl::unexpected(dim.error());
    if (spec.shape[static_cast<std::size_t>(*dim)] != rows)
        return makeError(ErrorCode::ShapeMismatch,
                         what + " has " + std::to_string(spec.shape[*dim]) +
                             " rows along its batch dim, each chunk has " + std::to_string(rows));
    return OutputMerge{OutputMerge::Kind::Concat, *dim};
}

// `planned`: the rows of a plan request's micro-batched inputs (they carry no tensor).
Expected<BatchSplit> parseBatch(const json::object& batch, const GraphSubmission& submission,
                                std::optional<std::int64_t> planned) {
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
    auto micro = parseMicroBatch(batch);
    if (!micro)
        return tl::unexpected(micro.error());
    split.microBatch = *micro;
    split.size = -1;
    for (std::size_t i = 0; i < graph.inputs.size(); ++i) {
        const json::value& entry = inputs->get_array()[i];
        if (entry.is_null()) {
            split.inputDims.push_back(std::nullopt);
            continue;
        }
        if (!entry.is_int64())
            return makeError(ErrorCode::InvalidInput, "batch input dims are integers or null");
        auto dim = normaliseDim(entry.get_int64(), graph.inputs[i].spec.shape.size(), inputName(i));
        if (!dim)
            return tl::unexpected(dim.error());
        auto rows = markedRows(submission, i, *dim, split.microBatch, planned);
        if (!rows)
            return tl::unexpected(rows.error());
        if (split.size >= 0 && *rows != split.size)
            return makeError(ErrorCode::ShapeMismatch,
                             inputName(i) + " has batch size " + std::to_string(*rows) +
                                 ", another marked input has " + std::to_string(split.size));
        split.size = *rows;
        split.inputDims.push_back(*dim);
    }
    if (split.size < 0)
        return makeError(ErrorCode::InvalidInput, "batch marks no input");
    if (split.size == 0)
        return makeError(ErrorCode::InvalidInput, "the batch is empty");
    const std::int64_t chunkRows = split.microBatch > 0 ? split.microBatch : split.size;
    for (std::size_t o = 0; o < graph.outputs.size(); ++o) {
        auto merge = parseOutputMerge(outputs->get_array()[o], o,
                                      submission.plan.specs.at(graph.outputs[o]), chunkRows);
        if (!merge)
            return tl::unexpected(merge.error());
        split.outputs.push_back(*merge);
    }
    if (const auto* chunks = batch.if_contains("chunks"); chunks && !chunks->is_null()) {
        if (!chunks->is_int64() || chunks->get_int64() < 1 || chunks->get_int64() > kMaxGraphChunks)
            return makeError(ErrorCode::InvalidInput,
                             "batch 'chunks' must be an integer from 1 to " +
                                 std::to_string(kMaxGraphChunks));
        split.chunks = std::min(chunks->get_int64(), split.size);
    }
    if (split.microBatch > 0) {
        const std::int64_t count = split.size / split.microBatch;
        if (count > kMaxGraphChunks)
            return makeError(ErrorCode::LimitExceeded, std::to_string(count) +
                                                           " micro-batches; a job has at most " +
                                                           std::to_string(kMaxGraphChunks));
        if (split.chunks != 0 && split.chunks != count)
            return makeError(
                ErrorCode::InvalidInput,
                "with a micro-batch every chunk is one micro-batch: 'chunks' must be " +
                    std::to_string(count) + " or absent");
        split.chunks = count;
    }
    return split;
}

// Every input has the declared dtype and shape (a marked input of a micro-batched job: but for its
// batch dim, which parseBatch checked).
Expected<void> checkInputs(const GraphSubmission& submission) {
    const auto& inputs = submission.graph.inputs;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (!submission.inputs[i])
            continue; // a plan request: the graph's declaration is the shape
        const core::Tensor& tensor = *submission.inputs[i];
        if (tensor.dtype() != inputs[i].spec.dtype)
            return makeError(ErrorCode::UnsupportedDtype,
                             inputName(i) + " is " + std::string(core::wireName(tensor.dtype())) +
                                 ", the graph declares " +
                                 std::string(core::wireName(inputs[i].spec.dtype)));
        core::Shape expected = inputs[i].spec.shape;
        if (submission.batch && submission.batch->microBatch > 0 && submission.batch->inputDims[i])
            expected[static_cast<std::size_t>(*submission.batch->inputDims[i])] =
                submission.batch->size;
        if (tensor.shape() != expected)
            return makeError(ErrorCode::ShapeMismatch,
                             inputName(i) + " does not have the declared shape");
    }
    return {};
}

// A submit_graph's fields, with its input tensors or (a plan request) null ones.
Expected<GraphSubmission> parseRequest(const json::object& control,
                                       std::vector<net::TensorPtr> tensors, bool planOnly,
                                       std::optional<std::int64_t> planned,
                                       const core::graph::GraphLimits& limits) {
    const json::value* graphJson = control.if_contains("graph");
    if (!graphJson || !graphJson->is_object())
        return makeError(ErrorCode::InvalidInput,
                         std::string(planOnly ? "plan_graph" : "submit_graph") +
                             " needs a 'graph' object");
    auto graph = core::graph::decodeGraph(json::serialize(*graphJson), limits);
    if (!graph)
        return tl::unexpected(graph.error());
    auto plan = core::graph::validateGraph(*graph, limits);
    if (!plan)
        return tl::unexpected(plan.error());
    if (planOnly)
        tensors.assign(graph->inputs.size(), nullptr);
    GraphSubmission submission{std::move(*graph), std::move(*plan), std::move(tensors),
                               std::nullopt, GraphVerification::Replicas};
    if (const auto* verification = control.if_contains("verification");
        verification && !verification->is_null()) {
        if (*verification == "freivalds")
            submission.verification = GraphVerification::Freivalds;
        else if (*verification != "replicas")
            return makeError(ErrorCode::InvalidInput,
                             "'verification' is \"replicas\" (the default) or \"freivalds\"");
    }
    const auto& inputs = submission.graph.inputs;
    if (submission.inputs.size() != inputs.size())
        return makeError(ErrorCode::InvalidInput,
                         "the graph has " + std::to_string(inputs.size()) + " input(s), " +
                             std::to_string(submission.inputs.size()) + " tensor(s) came");
    if (const auto* batch = control.if_contains("batch"); batch && !batch->is_null()) {
        if (!batch->is_object())
            return makeError(ErrorCode::InvalidInput, "'batch' must be an object");
        auto split = parseBatch(batch->get_object(), submission, planned);
        if (!split)
            return tl::unexpected(split.error());
        submission.batch = std::move(*split);
    }
    if (planned && (!submission.batch || submission.batch->microBatch == 0))
        return makeError(ErrorCode::InvalidInput,
                         "'rows' is for micro-batched jobs (batch 'micro_batch'); other inputs "
                         "carry the rows they declare");
    if (auto ok = checkInputs(submission); !ok)
        return tl::unexpected(ok.error());
    return submission;
}

} // namespace

Expected<GraphSubmission> parseGraphSubmission(const net::Message& message,
                                               const core::graph::GraphLimits& limits) {
    return parseRequest(message.control, message.tensors, false, std::nullopt, limits);
}

Expected<GraphSubmission> parseGraphPlanRequest(const net::PlanGraph& request,
                                                const core::graph::GraphLimits& limits) {
    json::object control{{"graph", request.graph}};
    if (request.batch)
        control["batch"] = *request.batch;
    if (request.verification)
        control["verification"] = *request.verification;
    return parseRequest(control, {}, true, request.rows, limits);
}

std::vector<core::Tensor> valuesOf(const std::vector<net::TensorPtr>& tensors) {
    std::vector<core::Tensor> values;
    values.reserve(tensors.size());
    for (const auto& tensor : tensors)
        values.push_back(*tensor); // shares the storage
    return values;
}

} // namespace goblin::labnode
