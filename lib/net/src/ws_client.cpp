#include "goblin/net/ws_client.hpp"

#include <boost/asio/strand.hpp>
#include <boost/beast/websocket.hpp>

namespace goblin::net {

namespace beast = boost::beast;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

class Connector : public std::enable_shared_from_this<Connector> {
public:
    Connector(asio::io_context& io, WsUrl url, std::string path, const Limits& limits,
              ConnectHandler done)
        : m_resolver(asio::make_strand(io)), m_ws(m_resolver.get_executor()), m_url(std::move(url)),
          m_path(std::move(path)), m_limits(limits), m_done(std::move(done)) {}

    void start() {
        m_resolver.async_resolve(
            m_url.host, m_url.port,
            beast::bind_front_handler(&Connector::onResolve, shared_from_this()));
    }

private:
    void onResolve(beast::error_code ec, tcp::resolver::results_type results) {
        if (ec)
            return fail("cannot resolve " + m_url.host + ": " + ec.message());
        beast::get_lowest_layer(m_ws).expires_after(m_limits.handshakeTimeout);
        beast::get_lowest_layer(m_ws).async_connect(
            results, beast::bind_front_handler(&Connector::onConnect, shared_from_this()));
    }

    void onConnect(beast::error_code ec, const tcp::endpoint&) {
        if (ec)
            return fail("cannot connect to " + m_url.host + ":" + m_url.port + ": " + ec.message());
        beast::get_lowest_layer(m_ws).expires_never();
        beast::error_code ignored;
        beast::get_lowest_layer(m_ws).socket().set_option(tcp::no_delay(true), ignored);
        configureStream(m_ws, m_limits, false);
        m_ws.async_handshake(
            m_url.host + ":" + m_url.port, m_path,
            beast::bind_front_handler(&Connector::onHandshake, shared_from_this()));
    }

    void onHandshake(beast::error_code ec) {
        if (ec)
            return fail("WebSocket handshake with " + m_url.host + ":" + m_url.port + m_path +
                        " failed: " + ec.message());
        // The client chose this server: it may send the larger control frames of authenticated
        // peers (graph tasks carry their graph as JSON).
        auto connection = std::make_shared<WsConnection>(std::move(m_ws), m_limits, m_url.host);
        connection->allowTensors();
        m_done(std::move(connection));
    }

    void fail(std::string message) { m_done(makeError(ErrorCode::Internal, std::move(message))); }

    tcp::resolver m_resolver;
    WsConnection::Stream m_ws;
    WsUrl m_url;
    std::string m_path;
    Limits m_limits;
    ConnectHandler m_done;
};

} // namespace

void connectWebSocket(asio::io_context& io, const WsUrl& url, const std::string& path,
                      const Limits& limits, ConnectHandler done) {
    std::make_shared<Connector>(io, url, path, limits, std::move(done))->start();
}

} // namespace goblin::net
