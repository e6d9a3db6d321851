// The connecting side of the transport: resolve, TCP connect, TLS handshake for wss:// (the
// certificate verified and its host name checked), WebSocket handshake, then a WsConnection on
// its own strand. The completion handler runs on that strand.
#pragma once

#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>

#include "goblin/core/error.hpp"
#include "goblin/net/limits.hpp"
#include "goblin/net/tls_context.hpp"
#include "goblin/net/ws_connection.hpp"
#include "goblin/net/ws_url.hpp"

namespace goblin::net {

using ConnectHandler = std::function<void(Expected<std::shared_ptr<WsConnection>>)>;

// Connects to url.host:url.port and upgrades on `path` (e.g. "/v1/volunteer"). A wss:// URL
// speaks TLS with `tls` (makeClientTlsContext), or with the system trust store when it is null;
// `tls` is ignored for ws://.
void connectWebSocket(boost::asio::io_context& io, const WsUrl& url, const std::string& path,
                      const Limits& limits, ConnectHandler done, TlsContext tls = nullptr);

} // namespace goblin::net
