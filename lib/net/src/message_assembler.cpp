#include "goblin/net/message_assembler.hpp"

#include <string>

#include <boost/json/parse.hpp>

#include "goblin/core/precise_json.hpp"
#include "goblin/core/tensor_frame.hpp"

namespace goblin::net {

MessageAssembler::MessageAssembler(const Limits& limits)
    : m_limits(limits), m_controlLimit(limits.maxControlBytes) {}

std::size_t MessageAssembler::nextFrameLimit() const {
    if (m_tensorsDue > 0)
        return m_limits.maxTensorBytes + core::kMaxFrameHeaderBytes + 2 * core::kFrameAlignment;
    return m_controlLimit;
}

Expected<std::optional<Message>> MessageAssembler::onFrame(FrameKind kind,
                                                           std::span<const std::byte> payload) {
    if (kind == FrameKind::Text) {
        if (m_tensorsDue > 0)
            return makeError(ErrorCode::InvalidMessage, "a text frame arrived while " +
                                                            std::to_string(m_tensorsDue) +
                                                            " tensor frame(s) were still due");
        return onControl(payload);
    }
    if (m_tensorsDue == 0)
        return makeError(ErrorCode::InvalidFrame,
                         "a binary frame arrived that no message announced");
    return onTensor(payload);
}

Expected<std::optional<Message>> MessageAssembler::onControl(std::span<const std::byte> payload) {
    if (payload.size() > m_controlLimit)
        return makeError(ErrorCode::LimitExceeded, "control message over the size limit");
    boost::json::error_code ec;
    const std::string_view text(reinterpret_cast<const char*>(payload.data()), payload.size());
    // Doubles correctly rounded: a graph's constants and attributes must keep their exact bits.
    boost::json::value value = core::parsePrecise(text, ec);
    if (ec || !value.is_object())
        return makeError(ErrorCode::InvalidMessage, "control frame is not a JSON object");
    Message message{std::move(value.get_object()), {}};
    if (message.type().empty())
        return makeError(ErrorCode::InvalidMessage, "control message has no string 'type'");
    std::size_t tensors = 0;
    if (const auto* count = message.control.if_contains("tensors")) {
        if (!count->is_int64() || count->get_int64() < 0 ||
            static_cast<std::size_t>(count->get_int64()) > m_limits.maxTensorsPerMessage)
            return makeError(ErrorCode::InvalidMessage,
                             "'tensors' must be an integer from 0 to " +
                                 std::to_string(m_limits.maxTensorsPerMessage));
        tensors = static_cast<std::size_t>(count->get_int64());
    }
    if (tensors == 0)
        return std::optional<Message>(std::move(message));
    if (!m_tensorsAllowed)
        return makeError(ErrorCode::InvalidMessage,
                         "tensors are refused before the hello is accepted");
    m_pending = std::move(message);
    m_tensorsDue = tensors;
    return std::optional<Message>();
}

Expected<std::optional<Message>> MessageAssembler::onTensor(std::span<const std::byte> payload) {
    auto tensor = core::decodeTensorFrame(payload, core::FrameLimits{m_limits.maxTensorBytes});
    if (!tensor)
        return tl::unexpected(tensor.error());
    m_pending->tensors.push_back(std::make_shared<const core::Tensor>(std::move(*tensor)));
    if (--m_tensorsDue > 0)
        return std::optional<Message>();
    std::optional<Message> complete = std::move(m_pending);
    m_pending.reset();
    return complete;
}

} // namespace goblin::net
