// Private helpers of the typed messages: reads shared by several parsers (type, request id,
// error code, tensor count). Pure functions; safe on any thread.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "goblin/core/error.hpp"
#include "goblin/net/message.hpp"
#include "goblin/net/messages/message_type.hpp"

namespace goblin::net::detail {

inline constexpr std::size_t kMaxNameBytes = 256; // job ids, tokens, backends, secrets

[[nodiscard]] tl::unexpected<Error> invalid(std::string message);
// One message from pieces (GCC 12's -Wrestrict misfires on "literal" + std::string at -O3).
std::string joined(std::initializer_list<std::string_view> pieces);
// "type" must be the wire name of `type`.
[[nodiscard]] Expected<void> requireType(const boost::json::object& control, MessageType type);
// A string of at most kMaxNameBytes bytes.
[[nodiscard]] Expected<std::string> requireName(const boost::json::object& control,
                                                std::string_view key);
// A request's "id": 0 when absent, an error when present and not an integer.
[[nodiscard]] Expected<std::int64_t> optionalId(const boost::json::object& control);
// "code" (a wire error code) and "message".
[[nodiscard]] Expected<Error> requireError(const boost::json::object& control);
// A "tensors" count, when the control object carries one, must match the tensors that came.
[[nodiscard]] Expected<void> checkTensorCount(const Message& message);
// "type", the tensor count and the request id of a message that carries tensors.
[[nodiscard]] Expected<std::int64_t> parseTensorRequest(const Message& message, MessageType type);
// An integer ≥ 0.
[[nodiscard]] Expected<std::int64_t> requireCount(const boost::json::object& control,
                                                  std::string_view key);
// A control object for `type`, with "tensors": N when the message carries N > 0 tensors.
boost::json::object controlOf(MessageType type);

// {"type", "id", "job"}: fetch, release, released, cancel and the head of others.
struct JobRequest {
    std::int64_t id = 0;
    std::string job;
};
Message jobRequestMessage(MessageType type, std::int64_t id, const std::string& job);
[[nodiscard]] Expected<JobRequest> parseJobRequest(const boost::json::object& control,
                                                   MessageType type);
Message withTensors(boost::json::object control, std::vector<TensorPtr> tensors);

} // namespace goblin::net::detail
