// The training job's researcher messages of researcher_messages.hpp: submit_train, its
// job_accepted and train_round (docs/protocol.md, "Training jobs").
#include "goblin/net/messages/researcher_messages.hpp"

#include "goblin/net/json_fields.hpp"
#include "goblin/net/messages/message_type.hpp"
#include "wire_checks.hpp"

namespace goblin::net {

namespace json = boost::json;
using detail::invalid;

Message toMessage(const SubmitTrain& submit) {
    json::object control = detail::controlOf(MessageType::SubmitTrain);
    control["id"] = submit.id;
    control["graph"] = submit.graph;
    control["train"] = submit.train;
    return detail::withTensors(std::move(control), submit.tensors);
}

Message toMessage(const TrainJobAccepted& accepted) {
    json::object control = detail::controlOf(MessageType::JobAccepted);
    control["id"] = accepted.id;
    control["job"] = accepted.job;
    control["kind"] = "train";
    control["rounds"] = accepted.rounds;
    return Message{std::move(control), {}};
}

Message toMessage(const TrainRound& round) {
    json::object control = detail::controlOf(MessageType::TrainRound);
    control["job"] = round.job;
    control["round"] = round.record;
    return Message{std::move(control), {}};
}

Expected<SubmitTrain> parseSubmitTrain(const Message& message) {
    auto id = detail::parseTensorRequest(message, MessageType::SubmitTrain);
    if (!id)
        return tl::unexpected(id.error());
    const auto* graph = message.control.if_contains("graph");
    const auto* train = message.control.if_contains("train");
    if (!graph || !graph->is_object() || !train || !train->is_object())
        return makeError(ErrorCode::InvalidInput,
                         "submit_train needs a 'graph' and a 'train' object");
    return SubmitTrain{*id, graph->get_object(), train->get_object(), message.tensors};
}

bool isTrainJobAccepted(const json::object& control) {
    const auto* kind = control.if_contains("kind");
    return kind && kind->is_string() && kind->get_string() == "train";
}

Expected<TrainJobAccepted> parseTrainJobAccepted(const json::object& control) {
    auto request = detail::parseJobRequest(control, MessageType::JobAccepted);
    if (!request)
        return tl::unexpected(request.error());
    if (!isTrainJobAccepted(control))
        return invalid("a training job_accepted has \"kind\": \"train\"");
    auto rounds = detail::requireCount(control, "rounds");
    if (!rounds)
        return tl::unexpected(rounds.error());
    return TrainJobAccepted{request->id, std::move(request->job), *rounds};
}

Expected<TrainRound> parseTrainRound(const json::object& control) {
    if (auto ok = detail::requireType(control, MessageType::TrainRound); !ok)
        return tl::unexpected(ok.error());
    auto job = detail::requireName(control, "job");
    if (!job)
        return tl::unexpected(job.error());
    const json::value* record = control.if_contains("round");
    if (!record || !record->is_object())
        return invalid("train_round needs a 'round' object");
    return TrainRound{std::move(*job), record->get_object()};
}

} // namespace goblin::net
