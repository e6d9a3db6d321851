#include "goblin/net/ws_client.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/websocket.hpp>
#include <openssl/ssl.h>

#include "ws_stream.hpp"

namespace goblin::net {

namespace beast = boost::beast;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

WsStream makeStream(const asio::any_io_executor& executor, const TlsContext& tls) {
    if (tls)
        return WsStream(TlsWebSocket(executor, *tls));
    return WsStream(PlainWebSocket(executor));
}

class Connector : public std::enable_shared_from_this<Connector> {
public:
    Connector(asio::io_context& io, WsUrl url, std::string path, const Limits& limits,
              const TlsContext& tls, ConnectHandler done)
        : m_resolver(asio::make_strand(io)), m_ws(makeStream(m_resolver.get_executor(), tls)),
          m_url(std::move(url)), m_path(std::move(path)), m_limits(limits),
          m_done(std::move(done)) {}

    void start() {
        m_resolver.async_resolve(
            m_url.host, m_url.port,
            beast::bind_front_handler(&Connector::onResolve, shared_from_this()));
    }

private:
    std::string where() const { return m_url.host + ":" + m_url.port; }

    void onResolve(beast::error_code ec, tcp::resolver::results_type results) {
        if (ec)
            return fail("cannot resolve " + m_url.host + ": " + ec.message());
        m_ws.tcp().expires_after(m_limits.handshakeTimeout);
        m_ws.tcp().async_connect(
            results, beast::bind_front_handler(&Connector::onConnect, shared_from_this()));
    }

    void onConnect(beast::error_code ec, const tcp::endpoint&) {
        if (ec)
            return fail("cannot connect to " + where() + ": " + ec.message());
        beast::error_code ignored;
        m_ws.tcp().socket().set_option(tcp::no_delay(true), ignored);
        auto* tls = m_ws.visit([](auto& ws) -> TlsWebSocket* {
            if constexpr (std::is_same_v<std::decay_t<decltype(ws)>, TlsWebSocket>)
                return &ws;
            return nullptr;
        });
        if (!tls)
            return startWebSocket();
        // The certificate must name the host of the URL; a name (not an address) also goes out
        // as SNI so a node behind a shared address can pick its certificate.
        auto& ssl = tls->next_layer();
        ssl.set_verify_callback(asio::ssl::host_name_verification(m_url.host));
        beast::error_code notAddress;
        (void)asio::ip::make_address(m_url.host, notAddress);
        if (notAddress &&
            SSL_ctrl(ssl.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                     const_cast<char*>(m_url.host.c_str())) != 1)
            return fail("cannot set the TLS server name " + m_url.host);
        ssl.async_handshake(asio::ssl::stream_base::client,
                            beast::bind_front_handler(&Connector::onTls, shared_from_this()));
    }

    void onTls(beast::error_code ec) {
        if (ec)
            return fail("TLS handshake with " + where() + " failed: " + ec.message());
        startWebSocket();
    }

    void startWebSocket() {
        // The WebSocket handshake has its own timeout (configureStream).
        m_ws.tcp().expires_never();
        m_ws.visit([this](auto& ws) {
            configureStream(ws, m_limits);
            ws.async_handshake(
                where(), m_path,
                beast::bind_front_handler(&Connector::onHandshake, shared_from_this()));
        });
    }

    void onHandshake(beast::error_code ec) {
        if (ec)
            return fail("WebSocket handshake with " + where() + m_path +
                        " failed: " + ec.message());
        // The client chose this server: it may send the larger control frames of authenticated
        // peers (graph tasks carry their graph as JSON).
        auto connection = std::make_shared<WsConnection>(std::move(m_ws), m_limits, m_url.host);
        connection->allowTensors();
        m_done(std::move(connection));
    }

    void fail(std::string message) { m_done(makeError(ErrorCode::Internal, std::move(message))); }

    tcp::resolver m_resolver;
    WsStream m_ws;
    WsUrl m_url;
    std::string m_path;
    Limits m_limits;
    ConnectHandler m_done;
};

} // namespace

void connectWebSocket(asio::io_context& io, const WsUrl& url, const std::string& path,
                      const Limits& limits, ConnectHandler done, TlsContext tls) {
    if (url.tls && !tls) {
        auto system = makeClientTlsContext("");
        if (!system)
            return done(tl::unexpected(system.error()));
        tls = std::move(*system);
    }
    if (!url.tls)
        tls.reset();
    std::make_shared<Connector>(io, url, path, limits, tls, std::move(done))->start();
}

} // namespace goblin::net
