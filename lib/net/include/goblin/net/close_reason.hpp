// WebSocket close codes and reasons for protocol errors (docs/protocol.md, "Error codes").
// Pure functions; safe on any thread.
#pragma once

#include <cstdint>
#include <string>

#include "goblin/core/error.hpp"

namespace goblin::net {

std::uint16_t closeCodeFor(ErrorCode code);
// "<wire code>: <message>", cut to the 123 bytes a close frame can carry (on a UTF-8 boundary).
std::string closeReasonFor(const Error& error);
// The error a peer's close frame stands for: the code named by the reason's "<code>:" prefix when
// there is one, otherwise one derived from the close code.
Error closeErrorFromPeer(std::uint16_t closeCode, const std::string& reason);

} // namespace goblin::net
