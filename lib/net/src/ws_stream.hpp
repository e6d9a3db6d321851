// The WebSocket stream of one connection, plain (ws://) or over TLS (wss://): a variant that the
// transport's sessions visit, so WsConnection has one code path for both. Private to lib/net; it
// lives on its connection's strand.
#pragma once

#include <utility>
#include <variant>

#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "goblin/net/limits.hpp"

namespace goblin::net {

using PlainWebSocket = boost::beast::websocket::stream<boost::beast::tcp_stream>;
using TlsWebSocket =
    boost::beast::websocket::stream<boost::beast::ssl_stream<boost::beast::tcp_stream>>;

class WsStream {
public:
    explicit WsStream(PlainWebSocket ws) : m_ws(std::move(ws)) {}
    explicit WsStream(TlsWebSocket ws) : m_ws(std::move(ws)) {}

    // Calls f(stream) with the stream's real type; every Beast call goes through here.
    template <class F> decltype(auto) visit(F&& f) { return std::visit(std::forward<F>(f), m_ws); }

    boost::asio::any_io_executor executor() {
        return visit([](auto& ws) { return boost::asio::any_io_executor(ws.get_executor()); });
    }
    // The TCP layer under either stream (its socket, its expiry).
    boost::beast::tcp_stream& tcp() {
        return visit([](auto& ws) -> boost::beast::tcp_stream& {
            return boost::beast::get_lowest_layer(ws);
        });
    }

private:
    std::variant<PlainWebSocket, TlsWebSocket> m_ws;
};

// Applies the protocol's stream settings: timeouts, no compression, read limit.
template <class Stream> void configureStream(Stream& ws, const Limits& limits) {
    boost::beast::websocket::stream_base::timeout timeout{};
    timeout.handshake_timeout = limits.handshakeTimeout;
    timeout.idle_timeout = limits.idleTimeout;
    timeout.keep_alive_pings = true;
    ws.set_option(timeout);
    boost::beast::websocket::permessage_deflate deflate;
    deflate.client_enable = false;
    deflate.server_enable = false;
    ws.set_option(deflate);
    ws.auto_fragment(false);
    ws.read_message_max(limits.maxControlBytes);
}

} // namespace goblin::net
