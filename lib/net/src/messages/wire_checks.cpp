#include "wire_checks.hpp"

#include "goblin/net/json_fields.hpp"

namespace goblin::net::detail {

tl::unexpected<Error> invalid(std::string message) {
    return makeError(ErrorCode::InvalidMessage, std::move(message));
}

std::string joined(std::initializer_list<std::string_view> pieces) {
    std::string text;
    for (std::string_view piece : pieces)
        text.append(piece);
    return text;
}

Expected<void> requireType(const boost::json::object& control, MessageType type) {
    const auto* value = control.if_contains("type");
    if (value && value->is_string() && value->get_string() == wireName(type))
        return {};
    std::string got = value && value->is_string() ? std::string(value->get_string()) : "no type";
    if (got.size() > 64)
        got = got.substr(0, 64) + "…";
    return invalid(joined({"expected a '", wireName(type), "' message, got '", got, "'"}));
}

Expected<std::string> requireName(const boost::json::object& control, std::string_view key) {
    auto value = requireString(control, key);
    if (value && value->size() > kMaxNameBytes)
        return invalid(
            joined({"field '", key, "' is longer than ", std::to_string(kMaxNameBytes), " bytes"}));
    return value;
}

Expected<std::int64_t> optionalId(const boost::json::object& control) {
    if (!control.contains("id"))
        return 0;
    return requireInt(control, "id");
}

Expected<Error> requireError(const boost::json::object& control) {
    auto code = requireString(control, "code");
    if (!code)
        return tl::unexpected(code.error());
    const auto parsed = errorCodeFromWireName(*code);
    if (!parsed)
        return invalid("field 'code' names no error code of the protocol");
    auto message = requireString(control, "message");
    if (!message)
        return tl::unexpected(message.error());
    return Error{*parsed, std::move(*message)};
}

Expected<void> checkTensorCount(const Message& message) {
    for (const TensorPtr& tensor : message.tensors)
        if (!tensor)
            return invalid("a tensor of the message is missing");
    if (!message.control.contains("tensors"))
        return {};
    auto count = requireInt(message.control, "tensors");
    if (!count)
        return tl::unexpected(count.error());
    if (*count != static_cast<std::int64_t>(message.tensors.size()))
        return invalid("field 'tensors' says " + std::to_string(*count) + ", " +
                       std::to_string(message.tensors.size()) + " came");
    return {};
}

Expected<std::int64_t> parseTensorRequest(const Message& message, MessageType type) {
    if (auto ok = requireType(message.control, type); !ok)
        return tl::unexpected(ok.error());
    if (auto ok = checkTensorCount(message); !ok)
        return tl::unexpected(ok.error());
    return optionalId(message.control);
}

Expected<std::int64_t> requireCount(const boost::json::object& control, std::string_view key) {
    return requireIntIn(control, key, 0, INT64_MAX);
}

boost::json::object controlOf(MessageType type) {
    return boost::json::object{{"type", wireName(type)}};
}

Message withTensors(boost::json::object control, std::vector<TensorPtr> tensors) {
    if (!tensors.empty())
        control["tensors"] = static_cast<std::int64_t>(tensors.size());
    return Message{std::move(control), std::move(tensors)};
}

Message jobRequestMessage(MessageType type, std::int64_t id, const std::string& job) {
    boost::json::object control = controlOf(type);
    control["id"] = id;
    control["job"] = job;
    return Message{std::move(control), {}};
}

Expected<JobRequest> parseJobRequest(const boost::json::object& control, MessageType type) {
    if (auto ok = requireType(control, type); !ok)
        return tl::unexpected(ok.error());
    auto id = optionalId(control);
    if (!id)
        return tl::unexpected(id.error());
    auto job = requireName(control, "job");
    if (!job)
        return tl::unexpected(job.error());
    return JobRequest{*id, std::move(*job)};
}

} // namespace goblin::net::detail
