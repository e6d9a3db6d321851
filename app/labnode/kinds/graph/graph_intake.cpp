#include "kinds/graph/graph_intake.hpp"

#include <algorithm>

#include <boost/json.hpp>

#include "goblin/core/precise_json.hpp"
#include "kinds/graph/graph_blobs.hpp"
#include "kinds/graph/graph_cost.hpp"

namespace goblin::labnode {

namespace json = boost::json;

Expected<GraphIntake> takeInGraph(const net::Message& message, std::int64_t volunteers,
                                  const GraphIntakeSettings& settings, const BlobStore& blobs) {
    auto submission = parseGraphSubmission(message, settings.limits);
    if (!submission)
        return tl::unexpected(submission.error());
    auto chunks =
        splitIntoChunks(*submission, std::max<std::int64_t>(1, volunteers), settings.limits);
    if (!chunks)
        return tl::unexpected(chunks.error());
    for (const GraphChunk& chunk : *chunks)
        if (chunk.peakBytes > settings.maxTaskBytes)
            return makeError(ErrorCode::LimitExceeded,
                             "a task of this graph holds " + std::to_string(chunk.peakBytes >> 20) +
                                 " MiB of values at once; this node allows " +
                                 std::to_string(settings.maxTaskBytes >> 20) +
                                 " MiB (split it along a batch dim into more chunks)");
    auto stored = storeTensors(blobs, valuesOf(submission->inputs));
    if (!stored)
        return makeError(ErrorCode::Internal, "storing the inputs: " + stored.error().message);
    json::object request{{"graph", message.control.at("graph")}};
    for (const char* field : {"batch", "verification"})
        if (const auto* value = message.control.if_contains(field))
            request[field] = *value;
    double flops = 0;
    for (const GraphChunk& chunk : *chunks)
        flops += graphFlops(chunk.graph, chunk.plan);
    return GraphIntake{std::move(*submission), std::move(*chunks), json::serialize(request),
                       json::serialize(*stored), flops};
}

Expected<std::vector<GraphTaskRow>> insertGraphJobAndTasks(Database& db, const GraphJobRow& job) {
    auto transaction = Transaction::begin(db);
    if (!transaction)
        return tl::unexpected(transaction.error());
    if (auto ok = insertGraphJob(db, job); !ok)
        return tl::unexpected(ok.error());
    std::vector<GraphTaskRow> tasks;
    for (std::int64_t chunk = 0; chunk < job.tasks; ++chunk) {
        auto taskId = insertGraphTask(db, job.id, chunk);
        if (!taskId)
            return tl::unexpected(taskId.error());
        tasks.push_back(GraphTaskRow{*taskId, chunk, false, {}, 0});
    }
    if (auto ok = transaction->commit(); !ok)
        return tl::unexpected(ok.error());
    return tasks;
}

Expected<GraphIntake> reloadGraphIntake(const GraphJobRow& row, const GraphIntakeSettings& settings,
                                        const BlobStore& blobs) {
    json::error_code requestError, inputsError;
    json::value request = core::parsePrecise(row.request, requestError);
    json::value stored = json::parse(row.inputs, inputsError);
    if (requestError || inputsError || !request.is_object() || !stored.is_array())
        return makeError(ErrorCode::Internal, "its stored request is malformed");
    auto inputs = loadTensors(blobs, stored.get_array());
    if (!inputs)
        return tl::unexpected(inputs.error());
    net::Message message{request.get_object(), {}};
    for (core::Tensor& input : *inputs)
        message.tensors.push_back(std::make_shared<const core::Tensor>(std::move(input)));
    auto submission = parseGraphSubmission(message, settings.limits);
    if (!submission)
        return tl::unexpected(submission.error());
    auto chunks = splitIntoChunks(*submission, row.tasks, settings.limits);
    if (!chunks)
        return tl::unexpected(chunks.error());
    return GraphIntake{std::move(*submission), std::move(*chunks), row.request, row.inputs, 0};
}

} // namespace goblin::labnode
