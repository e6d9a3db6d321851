#include "goblin/net/ws_url.hpp"

#include <charconv>

namespace goblin::net {

Expected<WsUrl> parseWsUrl(const std::string& url) {
    constexpr std::string_view kPlain = "ws://";
    constexpr std::string_view kTls = "wss://";
    WsUrl parsed;
    parsed.tls = url.rfind(kTls, 0) == 0;
    if (!parsed.tls && url.rfind(kPlain, 0) != 0)
        return makeError(ErrorCode::InvalidInput,
                         "node URL '" + url +
                             "' must start with ws:// or wss:// (e.g. wss://lab.example.org:7000)");
    std::string rest = url.substr(parsed.tls ? kTls.size() : kPlain.size());
    if (auto slash = rest.find('/'); slash != std::string::npos) {
        parsed.path = rest.substr(slash);
        rest.resize(slash);
    }
    const auto colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size())
        return makeError(ErrorCode::InvalidInput, "node URL '" + url + "' needs HOST:PORT");
    parsed.host = rest.substr(0, colon);
    parsed.port = rest.substr(colon + 1);
    if (parsed.host.front() == '[' && parsed.host.back() == ']')
        parsed.host = parsed.host.substr(1, parsed.host.size() - 2);
    int port = 0;
    auto [end, ec] =
        std::from_chars(parsed.port.data(), parsed.port.data() + parsed.port.size(), port);
    if (ec != std::errc() || end != parsed.port.data() + parsed.port.size() || port < 1 ||
        port > 65535)
        return makeError(ErrorCode::InvalidInput, "node URL '" + url + "' has an invalid port");
    return parsed;
}

} // namespace goblin::net
