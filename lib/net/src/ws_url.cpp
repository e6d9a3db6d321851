#include "goblin/net/ws_url.hpp"

#include <charconv>

namespace goblin::net {

Expected<WsUrl> parseWsUrl(const std::string& url) {
    constexpr std::string_view kScheme = "ws://";
    if (url.rfind(kScheme, 0) != 0)
        return makeError(ErrorCode::InvalidInput,
                         "node URL '" + url + "' must start with ws:// (e.g. ws://127.0.0.1:7000)");
    std::string rest = url.substr(kScheme.size());
    WsUrl parsed;
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
