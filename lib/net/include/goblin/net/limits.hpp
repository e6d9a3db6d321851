// Explicit limits of a connection, enforced before allocation (docs/protocol.md, "Limits").
// Plain values; safe on any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace goblin::net {

inline constexpr int kProtocolVersion = 1;
inline constexpr int kCatalogVersion = 1;

struct Limits {
    std::size_t maxControlBytes = 64 * 1024;
    std::size_t maxTensorBytes = std::size_t{1} << 30;
    std::size_t maxTensorsPerMessage = 8;
    std::int64_t maxTiles = 1'000'000;
    std::chrono::seconds handshakeTimeout{10};
    std::chrono::seconds idleTimeout{60};
    int maxConnectionsPerAddress = 64;
};

} // namespace goblin::net
