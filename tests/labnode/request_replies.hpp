// What a fake researcher connection was answered, by request id. Test thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "labnode/node_harness.hpp"

namespace goblin::labnode::testing {

// The reply to request `id` (the last message that repeats it); an empty message when none.
inline net::Message replyTo(const FakePeerLink& link, std::int64_t id) {
    const auto sent = link.sent();
    for (auto it = sent.rbegin(); it != sent.rend(); ++it)
        if (const auto* repeated = it->control.if_contains("id");
            repeated && repeated->is_int64() && repeated->get_int64() == id)
            return *it;
    return net::Message{};
}

// (code, message) of the error answered to request `id`; empty when it was not an error.
inline std::pair<std::string, std::string> errorOf(const FakePeerLink& link, std::int64_t id) {
    const net::Message reply = replyTo(link, id);
    if (reply.type() != "error")
        return {};
    return {std::string(reply.control.at("code").as_string()),
            std::string(reply.control.at("message").as_string())};
}

} // namespace goblin::labnode::testing
