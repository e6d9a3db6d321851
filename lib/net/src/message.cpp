#include "goblin/net/message.hpp"

#include <boost/json/serialize.hpp>

#include "goblin/core/tensor_frame.hpp"

namespace goblin::net {

std::string_view Message::type() const {
    const auto* value = control.if_contains("type");
    if (!value || !value->is_string())
        return {};
    return value->get_string();
}

std::size_t OutgoingFrame::byteSize() const {
    if (kind == FrameKind::Text)
        return text.size();
    return prefix.size() + (tensor ? tensor->byteSize() : 0);
}

std::vector<OutgoingFrame> encodeMessage(const Message& message) {
    std::vector<OutgoingFrame> frames;
    frames.reserve(1 + message.tensors.size());
    boost::json::object control = message.control;
    if (!message.tensors.empty())
        control["tensors"] = message.tensors.size();
    frames.push_back(OutgoingFrame{FrameKind::Text, boost::json::serialize(control), {}, {}});
    for (const TensorPtr& tensor : message.tensors)
        frames.push_back(
            OutgoingFrame{FrameKind::Binary, {}, core::encodeTensorFramePrefix(*tensor), tensor});
    return frames;
}

} // namespace goblin::net
