// Parsing of "ws://HOST:PORT[/path]" and "wss://HOST:PORT[/path]" (TLS) node addresses. Pure;
// safe on any thread.
#pragma once

#include <string>

#include "goblin/core/error.hpp"

namespace goblin::net {

struct WsUrl {
    std::string host;
    std::string port;
    std::string path; // "" when the URL has none
    bool tls = false; // wss://
};

Expected<WsUrl> parseWsUrl(const std::string& url);

} // namespace goblin::net
