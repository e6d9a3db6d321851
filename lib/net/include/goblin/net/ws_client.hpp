// The connecting side of the transport: resolve, TCP connect, WebSocket handshake, then a
// WsConnection on its own strand. The completion handler runs on that strand.
#pragma once

#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>

#include "goblin/core/error.hpp"
#include "goblin/net/limits.hpp"
#include "goblin/net/ws_connection.hpp"
#include "goblin/net/ws_url.hpp"

namespace goblin::net {

using ConnectHandler = std::function<void(Expected<std::shared_ptr<WsConnection>>)>;

// Connects to url.host:url.port and upgrades on `path` (e.g. "/v1/volunteer").
void connectWebSocket(boost::asio::io_context& io, const WsUrl& url, const std::string& path,
                      const Limits& limits, ConnectHandler done);

} // namespace goblin::net
