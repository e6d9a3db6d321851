// A protocol message: a JSON control object plus the tensors that follow it, and its encoding into
// WebSocket frames. Values; owned by one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "goblin/core/tensor.hpp"

namespace goblin::net {

using TensorPtr = std::shared_ptr<const core::Tensor>;

struct Message {
    boost::json::object control;
    std::vector<TensorPtr> tensors;

    std::string_view type() const;
};

enum class FrameKind { Text, Binary };

// One WebSocket frame to send. A binary frame is prefix followed by the tensor's bytes, so the
// elements are never copied into a send buffer.
struct OutgoingFrame {
    FrameKind kind = FrameKind::Text;
    std::string text;
    std::vector<std::byte> prefix;
    TensorPtr tensor;

    std::size_t byteSize() const;
};

// Frames for a message: its control object (with "tensors": N when N > 0) then one per tensor.
std::vector<OutgoingFrame> encodeMessage(const Message& message);

} // namespace goblin::net
