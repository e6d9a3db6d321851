#include "goblin/net/ws_server.hpp"

#include <algorithm>
#include <stdexcept>

#include <boost/asio/strand.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

namespace goblin::net {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace websocket = boost::beast::websocket;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

std::shared_ptr<void> AddressCounter::acquire(const std::string& address) {
    std::lock_guard lock(m_mutex);
    int& count = m_counts[address];
    if (count >= m_max)
        return nullptr;
    ++count;
    // The token points at the counter itself (never deleted through it): non-null means granted.
    return std::shared_ptr<void>(static_cast<void*>(this),
                                 [self = shared_from_this(), address](void*) {
                                     std::lock_guard relock(self->m_mutex);
                                     if (--self->m_counts[address] <= 0)
                                         self->m_counts.erase(address);
                                 });
}

namespace {

// Reads one HTTP request; answers it or upgrades it to a WebSocket connection.
class HttpSession : public std::enable_shared_from_this<HttpSession> {
public:
    HttpSession(tcp::socket socket, const Limits& limits, const std::vector<std::string>& paths,
                HandlerFactory factory, HttpHandler http, std::shared_ptr<TrafficCounters> traffic,
                std::shared_ptr<void> slot, std::string peer)
        : m_stream(std::move(socket)), m_limits(limits), m_paths(paths),
          m_factory(std::move(factory)), m_http(std::move(http)), m_traffic(std::move(traffic)),
          m_slot(std::move(slot)), m_peer(std::move(peer)) {}

    void start() {
        m_parser.emplace();
        m_parser->header_limit(8 * 1024);
        m_parser->body_limit(4 * 1024);
        m_stream.expires_after(m_limits.handshakeTimeout);
        http::async_read(m_stream, m_buffer, *m_parser,
                         beast::bind_front_handler(&HttpSession::onRead, shared_from_this()));
    }

private:
    void onRead(beast::error_code ec, std::size_t) {
        if (ec)
            return; // timeouts and garbage before a request just drop the socket
        auto request = m_parser->release();
        const std::string path(request.target());
        if (websocket::is_upgrade(request)) {
            if (std::find(m_paths.begin(), m_paths.end(), path) == m_paths.end())
                return respond(request.version(), HttpAnswer{404, "text/plain", "unknown path\n"});
            return upgrade(std::move(request), path);
        }
        if (request.method() != http::verb::get)
            return respond(request.version(), HttpAnswer{});
        const std::string route = path.substr(0, path.find('?'));
        if (!m_http) {
            if (route == "/healthz")
                return respond(request.version(), HttpAnswer{200, "text/plain", "ok\n"});
            return respond(request.version(), HttpAnswer{});
        }
        // The handler may answer from another thread: the reply comes back to this strand.
        auto reply = [self = shared_from_this(), version = request.version()](HttpAnswer answer) {
            asio::post(self->m_stream.get_executor(),
                       [self, version, answer = std::move(answer)]() mutable {
                           self->respond(version, std::move(answer));
                       });
        };
        m_http(route, std::move(reply));
    }

    void respond(unsigned version, HttpAnswer answer) {
        auto response = std::make_shared<http::response<http::string_body>>(
            static_cast<http::status>(answer.status), version);
        response->set(http::field::content_type, answer.contentType);
        response->keep_alive(false);
        response->body() = std::move(answer.body);
        response->prepare_payload();
        http::async_write(m_stream, *response,
                          [self = shared_from_this(), response](beast::error_code, std::size_t) {
                              beast::error_code ignored;
                              self->m_stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
                          });
    }

    void upgrade(http::request<http::string_body> request, const std::string& path) {
        m_stream.expires_never();
        auto ws = std::make_shared<WsConnection::Stream>(std::move(m_stream));
        configureStream(*ws, m_limits, true);
        auto self = shared_from_this();
        ws->async_accept(request, [self, ws, path](beast::error_code ec) {
            if (ec)
                return;
            auto connection =
                std::make_shared<WsConnection>(std::move(*ws), self->m_limits, self->m_peer);
            connection->refuseTensorsUntilAllowed();
            if (self->m_traffic)
                connection->countTraffic(self->m_traffic);
            auto handler = self->m_factory(connection, path);
            // The connection keeps the per-address slot until it dies.
            connection->start(std::make_shared<SlotHolder>(std::move(handler), self->m_slot));
        });
    }

    // Wraps the real handler so the address slot lives exactly as long as the connection.
    struct SlotHolder : ConnectionHandler {
        SlotHolder(std::shared_ptr<ConnectionHandler> inner, std::shared_ptr<void> slot)
            : m_inner(std::move(inner)), m_slot(std::move(slot)) {}
        void onMessage(Message message) override { m_inner->onMessage(std::move(message)); }
        void onClosed(const Error& reason) override { m_inner->onClosed(reason); }
        std::shared_ptr<ConnectionHandler> m_inner;
        std::shared_ptr<void> m_slot;
    };

    beast::tcp_stream m_stream;
    beast::flat_buffer m_buffer;
    std::optional<http::request_parser<http::string_body>> m_parser;
    Limits m_limits;
    std::vector<std::string> m_paths;
    HandlerFactory m_factory;
    HttpHandler m_http;
    std::shared_ptr<TrafficCounters> m_traffic;
    std::shared_ptr<void> m_slot;
    std::string m_peer;
};

} // namespace

WsServer::WsServer(asio::io_context& io, const Limits& limits, std::vector<std::string> paths,
                   HandlerFactory factory)
    : m_io(io), m_limits(limits), m_paths(std::move(paths)), m_factory(std::move(factory)),
      m_acceptor(asio::make_strand(io)),
      m_addresses(std::make_shared<AddressCounter>(limits.maxConnectionsPerAddress)) {}

void WsServer::listen(const std::string& host, unsigned short port) {
    beast::error_code ec;
    const auto address = asio::ip::make_address(host, ec);
    if (ec)
        throw std::runtime_error("invalid listen address '" + host + "': " + ec.message());
    const tcp::endpoint endpoint(address, port);
    m_acceptor.open(endpoint.protocol(), ec);
    if (!ec)
        m_acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec)
        m_acceptor.bind(endpoint, ec);
    if (!ec)
        m_acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
        throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                                 ec.message());
}

unsigned short WsServer::port() const {
    return m_acceptor.local_endpoint().port();
}

void WsServer::start() {
    doAccept();
}

void WsServer::stop() {
    asio::post(m_acceptor.get_executor(), [self = shared_from_this()] {
        beast::error_code ignored;
        self->m_acceptor.close(ignored);
    });
}

void WsServer::doAccept() {
    m_acceptor.async_accept(asio::make_strand(m_io), [self = shared_from_this()](
                                                         beast::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !self->m_acceptor.is_open())
            return;
        if (!ec) {
            beast::error_code endpointError;
            const auto remote = socket.remote_endpoint(endpointError);
            const std::string peer = endpointError ? "unknown" : remote.address().to_string();
            if (auto slot = self->m_addresses->acquire(peer)) {
                socket.set_option(tcp::no_delay(true), endpointError);
                std::make_shared<HttpSession>(std::move(socket), self->m_limits, self->m_paths,
                                              self->m_factory, self->m_http, self->m_traffic,
                                              std::move(slot), peer)
                    ->start();
            }
            // Over the per-address limit: the socket closes as it goes out of scope.
        }
        self->doAccept();
    });
}

} // namespace goblin::net
