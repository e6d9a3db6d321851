#include "goblin/net/ws_server.hpp"

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/detect_ssl.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "ws_stream.hpp"

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

struct SessionSetup {
    Limits limits;
    std::vector<std::string> paths;
    HandlerFactory factory;
    HttpHandler http;
    HttpRequestHandler requests;
    std::size_t maxHttpBody = 4 * 1024;
    std::shared_ptr<TrafficCounters> traffic;
    TlsContext tls;
    ServerLog log;

    void note(const std::string& line) const {
        if (log)
            log(line);
    }
};

namespace {

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// Reads one HTTP request over a plain or TLS stream; answers it or upgrades it to a WebSocket
// connection.
template <class Stream>
class HttpSession : public std::enable_shared_from_this<HttpSession<Stream>> {
public:
    HttpSession(Stream stream, std::shared_ptr<const SessionSetup> setup,
                std::shared_ptr<void> slot, std::string peer, beast::flat_buffer buffer)
        : m_stream(std::move(stream)), m_buffer(std::move(buffer)), m_setup(std::move(setup)),
          m_slot(std::move(slot)), m_peer(std::move(peer)) {}

    void start() {
        m_parser.emplace();
        m_parser->header_limit(8 * 1024);
        m_parser->body_limit(m_setup->requests ? m_setup->maxHttpBody : 4 * 1024);
        beast::get_lowest_layer(m_stream).expires_after(m_setup->limits.handshakeTimeout);
        http::async_read(m_stream, m_buffer, *m_parser,
                         beast::bind_front_handler(&HttpSession::onRead, this->shared_from_this()));
    }

private:
    void onRead(beast::error_code ec, std::size_t) {
        if (ec == http::error::body_limit && m_setup->requests) {
            m_drainAfterReply = true;
            return respond(
                11, HttpAnswer{413, "text/plain; charset=utf-8", "request body too large\n"});
        }
        if (ec)
            return; // timeouts and garbage before a request just drop the socket
        auto request = m_parser->release();
        const std::string path(request.target());
        const std::vector<std::string>& paths = m_setup->paths;
        if (websocket::is_upgrade(request)) {
            if (std::find(paths.begin(), paths.end(), path) == paths.end())
                return respond(request.version(), HttpAnswer{404, "text/plain", "unknown path\n"});
            return upgrade(std::move(request), path);
        }
        if (m_setup->requests)
            return handOver(request);
        if (request.method() != http::verb::get)
            return respond(request.version(), HttpAnswer{});
        const std::string route = path.substr(0, path.find('?'));
        if (!m_setup->http) {
            if (route == "/healthz")
                return respond(request.version(), HttpAnswer{200, "text/plain", "ok\n"});
            return respond(request.version(), HttpAnswer{});
        }
        // The handler may answer from another thread: the reply comes back to this strand.
        auto reply = [self = this->shared_from_this(),
                      version = request.version()](HttpAnswer answer) {
            asio::post(self->m_stream.get_executor(),
                       [self, version, answer = std::move(answer)]() mutable {
                           self->respond(version, std::move(answer));
                       });
        };
        m_setup->http(route, std::move(reply));
    }

    void handOver(http::request<http::string_body>& request) {
        HttpRequest fields;
        fields.method = std::string(request.method_string());
        const std::string target(request.target());
        const auto question = target.find('?');
        fields.path = target.substr(0, question);
        if (question != std::string::npos)
            fields.query = target.substr(question + 1);
        fields.cookie = std::string(request[http::field::cookie]);
        fields.contentType = std::string(request[http::field::content_type]);
        fields.origin = std::string(request[http::field::origin]);
        fields.host = std::string(request[http::field::host]);
        fields.body = std::move(request.body());
        fields.peer = m_peer;
        m_setup->requests(std::move(fields), replyFor(request.version()));
    }

    HttpReply replyFor(unsigned version) {
        return [self = this->shared_from_this(), version](HttpAnswer answer) {
            asio::post(self->m_stream.get_executor(),
                       [self, version, answer = std::move(answer)]() mutable {
                           self->respond(version, std::move(answer));
                       });
        };
    }

    void respond(unsigned version, HttpAnswer answer) {
        auto response = std::make_shared<http::response<http::string_body>>(
            static_cast<http::status>(answer.status), version);
        response->set(http::field::content_type, answer.contentType);
        for (const auto& [name, value] : answer.headers)
            response->insert(name, value);
        response->keep_alive(false);
        response->body() = std::move(answer.body);
        response->prepare_payload();
        http::async_write(m_stream, *response,
                          [self = this->shared_from_this(),
                           response](beast::error_code, std::size_t) { self->endAfterReply(); });
    }

    void endAfterReply() {
        beast::error_code ignored;
        if constexpr (std::is_same_v<Stream, TlsStream>) {
            // close_notify, bounded like every wait here; the socket closes with the session.
            beast::get_lowest_layer(m_stream).expires_after(m_setup->limits.handshakeTimeout);
            m_stream.async_shutdown([self = this->shared_from_this()](beast::error_code) {});
        } else {
            m_stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
            if (m_drainAfterReply)
                drain(0);
        }
    }

    // After a 413 the client may still be sending its body: read and drop it (bounded in bytes and
    // time) so closing the socket does not reset the connection before the client reads the
    // answer.
    void drain(std::size_t drained) {
        static constexpr std::size_t kMaxDrain = 64u << 20;
        if (drained > kMaxDrain)
            return;
        m_buffer.clear();
        beast::get_lowest_layer(m_stream).expires_after(m_setup->limits.handshakeTimeout);
        m_stream.async_read_some(
            m_buffer.prepare(64 * 1024),
            [self = this->shared_from_this(), drained](beast::error_code ec, std::size_t bytes) {
                if (!ec)
                    self->drain(drained + bytes);
            });
    }

    void upgrade(http::request<http::string_body> request, const std::string& path) {
        beast::get_lowest_layer(m_stream).expires_never();
        auto ws = std::make_shared<websocket::stream<Stream>>(std::move(m_stream));
        configureStream(*ws, m_setup->limits);
        auto self = this->shared_from_this();
        ws->async_accept(request, [self, ws, path](beast::error_code ec) {
            if (ec)
                return;
            const SessionSetup& setup = *self->m_setup;
            auto connection = std::make_shared<WsConnection>(WsStream(std::move(*ws)), setup.limits,
                                                             self->m_peer);
            connection->refuseTensorsUntilAllowed();
            if (setup.traffic)
                connection->countTraffic(setup.traffic);
            auto handler = setup.factory(connection, path);
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

    Stream m_stream;
    beast::flat_buffer m_buffer;
    std::optional<http::request_parser<http::string_body>> m_parser;
    std::shared_ptr<const SessionSetup> m_setup;
    std::shared_ptr<void> m_slot;
    std::string m_peer;
    bool m_drainAfterReply = false;
};

// On a TLS server: reads the first bytes, refuses a plain connection (with a log line) and hands a
// TLS one, once its handshake is done, to an HttpSession. Detection and handshake share the
// handshake timeout.
class TlsGate : public std::enable_shared_from_this<TlsGate> {
public:
    TlsGate(tcp::socket socket, std::shared_ptr<const SessionSetup> setup,
            std::shared_ptr<void> slot, std::string peer)
        : m_tcp(std::move(socket)), m_setup(std::move(setup)), m_slot(std::move(slot)),
          m_peer(std::move(peer)) {}

    void start() {
        m_tcp.expires_after(m_setup->limits.handshakeTimeout);
        beast::async_detect_ssl(m_tcp, m_buffer,
                                beast::bind_front_handler(&TlsGate::onDetect, shared_from_this()));
    }

private:
    void onDetect(beast::error_code ec, bool tls) {
        if (ec)
            return; // silent or gone before its first bytes: the socket closes with the gate
        if (!tls) {
            std::string line = "refused a plain (non-TLS) connection from ";
            line.append(m_peer).append(": this node serves wss:// and https:// only");
            m_setup->note(line);
            beast::error_code ignored;
            m_tcp.socket().shutdown(tcp::socket::shutdown_both, ignored);
            return;
        }
        m_tls.emplace(std::move(m_tcp), *m_setup->tls);
        m_tls->async_handshake(
            asio::ssl::stream_base::server, m_buffer.data(),
            beast::bind_front_handler(&TlsGate::onHandshake, shared_from_this()));
    }

    void onHandshake(beast::error_code ec, std::size_t used) {
        if (ec) {
            std::string line = "TLS handshake with ";
            line.append(m_peer).append(" failed: ").append(ec.message());
            m_setup->note(line);
            return;
        }
        m_buffer.consume(used);
        std::make_shared<HttpSession<TlsStream>>(std::move(*m_tls), m_setup, std::move(m_slot),
                                                 std::move(m_peer), std::move(m_buffer))
            ->start();
    }

    beast::tcp_stream m_tcp;
    std::optional<TlsStream> m_tls;
    beast::flat_buffer m_buffer;
    std::shared_ptr<const SessionSetup> m_setup;
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
    m_setup = std::make_shared<const SessionSetup>(
        SessionSetup{m_limits, m_paths, m_factory, m_http, m_httpRequests, m_maxHttpBody, m_traffic,
                     m_tls, m_log});
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
                if (self->m_setup->tls)
                    std::make_shared<TlsGate>(std::move(socket), self->m_setup, std::move(slot),
                                              peer)
                        ->start();
                else
                    std::make_shared<HttpSession<beast::tcp_stream>>(
                        beast::tcp_stream(std::move(socket)), self->m_setup, std::move(slot), peer,
                        beast::flat_buffer())
                        ->start();
            }
            // Over the per-address limit: the socket closes as it goes out of scope.
        }
        self->doAccept();
    });
}

} // namespace goblin::net
