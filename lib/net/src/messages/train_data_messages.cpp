#include "goblin/net/messages/train_data_messages.hpp"

#include "goblin/net/json_fields.hpp"
#include "goblin/net/messages/message_type.hpp"
#include "wire_checks.hpp"

namespace goblin::net {

namespace json = boost::json;
using detail::invalid;

Message toMessage(const TrainBatch& batch) {
    Message message = detail::jobRequestMessage(MessageType::TrainBatch, batch.id, batch.job);
    message.control["batch"] = batch.batch;
    if (batch.end)
        message.control["end"] = true;
    return detail::withTensors(std::move(message.control), batch.tensors);
}

Message toMessage(const BatchAccepted& accepted) {
    Message message =
        detail::jobRequestMessage(MessageType::BatchAccepted, accepted.id, accepted.job);
    message.control["batch"] = accepted.batch;
    return message;
}

Expected<TrainBatch> parseTrainBatch(const Message& message) {
    if (auto ok = detail::checkTensorCount(message); !ok)
        return tl::unexpected(ok.error());
    auto request = detail::parseJobRequest(message.control, MessageType::TrainBatch);
    if (!request)
        return tl::unexpected(request.error());
    auto batch = requireIntIn(message.control, "batch", 0, INT64_MAX);
    if (!batch)
        return tl::unexpected(batch.error());
    bool end = false;
    if (const json::value* value = message.control.if_contains("end"); value) {
        if (!value->is_bool())
            return invalid("train_batch 'end' is true or false");
        end = value->get_bool();
    }
    if (message.tensors.size() != (end ? 0U : 2U))
        return invalid(end ? "a train_batch that ends the data carries no tensor"
                           : "a train_batch carries exactly 2 tensors (x, y)");
    return TrainBatch{request->id, std::move(request->job), *batch, end, message.tensors};
}

Expected<BatchAccepted> parseBatchAccepted(const json::object& control) {
    auto request = detail::parseJobRequest(control, MessageType::BatchAccepted);
    if (!request)
        return tl::unexpected(request.error());
    auto batch = requireIntIn(control, "batch", 0, INT64_MAX);
    if (!batch)
        return tl::unexpected(batch.error());
    return BatchAccepted{request->id, std::move(request->job), *batch};
}

} // namespace goblin::net
