// Sans-I/O protocol layer: WebSocket frames in, validated messages out (a control message plus the
// tensor frames it announced). No sockets; owned by one connection's strand.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <span>

#include "goblin/core/error.hpp"
#include "goblin/net/limits.hpp"
#include "goblin/net/message.hpp"

namespace goblin::net {

class MessageAssembler {
public:
    explicit MessageAssembler(const Limits& limits);

    // Feeds one complete frame. Returns a message once its control frame and all its tensors have
    // arrived, nothing while tensors are still due, or an error that ends the connection.
    Expected<std::optional<Message>> onFrame(FrameKind kind, std::span<const std::byte> payload);

    // The largest frame acceptable next: the control limit, or the tensor limit plus header room
    // while tensors are due. The transport sets its read limit to this before each read.
    std::size_t nextFrameLimit() const;

    // Until a peer is authenticated it may send small control messages only: a message announcing
    // tensors is refused, so an unauthenticated peer can never make the node allocate a tensor,
    // and control frames stay under maxControlBytes.
    void setTensorsAllowed(bool allowed) { m_tensorsAllowed = allowed; }
    // Once authenticated, control frames may grow to maxAuthenticatedControlBytes (graph JSON).
    void raiseControlLimit() {
        m_controlLimit = std::max(m_controlLimit, m_limits.maxAuthenticatedControlBytes);
    }

private:
    Expected<std::optional<Message>> onControl(std::span<const std::byte> payload);
    Expected<std::optional<Message>> onTensor(std::span<const std::byte> payload);

    Limits m_limits;
    std::optional<Message> m_pending;
    std::size_t m_controlLimit = 0;
    std::size_t m_tensorsDue = 0;
    bool m_tensorsAllowed = true;
};

} // namespace goblin::net
