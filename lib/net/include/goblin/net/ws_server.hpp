// The listening side of the transport: accepts TCP connections, enforces the per-address limit,
// answers plain HTTP GET requests (through an optional HttpHandler; without one GET /healthz says
// ok and everything else is 404; or any method through an HttpRequestHandler) and upgrades
// WebSocket requests on the known paths, handing each new WsConnection to a factory. With a TLS
// context every connection is TLS (plain ones are refused and logged). The acceptor runs on its own
// strand.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "goblin/net/limits.hpp"
#include "goblin/net/tls_context.hpp"
#include "goblin/net/ws_connection.hpp"

namespace goblin::net {

// Creates the handler for a new connection on `path`; called on the connection's strand.
using HandlerFactory = std::function<std::shared_ptr<ConnectionHandler>(
    const std::shared_ptr<WsConnection>& connection, const std::string& path)>;

// The answer to a plain HTTP request; `headers` are extra response fields (Set-Cookie, …).
struct HttpAnswer {
    unsigned status = 404;
    std::string contentType = "text/plain";
    std::string body = "not found\n";
    std::vector<std::pair<std::string, std::string>> headers{};
};

// A plain HTTP request as a request handler sees it (the body already read, within the limit).
struct HttpRequest {
    std::string method; // "GET", "POST", …
    std::string path;   // the target without its query string
    std::string query;  // after '?', still percent-encoded
    std::string cookie; // the Cookie field
    std::string contentType;
    std::string origin; // the Origin field, when the browser sent one
    std::string host;   // the Host field ("name:port"), as the client sent it
    std::string body;
    std::string peer; // the remote address
};

// Delivers an HttpAnswer to its session; callable once, from any thread (it posts to the session).
using HttpReply = std::function<void(HttpAnswer)>;
// Answers a plain GET for `path` (the request target without its query string). Called on the
// session's strand; it may compute the answer elsewhere and call `reply` later, once. A reply that
// is dropped uncalled closes the connection.
using HttpHandler = std::function<void(const std::string& path, HttpReply reply)>;
// Answers every plain request (any method) with its fields and body; called like HttpHandler.
using HttpRequestHandler = std::function<void(HttpRequest request, HttpReply reply)>;
// Receives the server's own log lines (refused plain connections, failed TLS handshakes); called on
// network threads.
using ServerLog = std::function<void(const std::string& line)>;

// Tracks live connections per remote address. Thread-safe.
class AddressCounter : public std::enable_shared_from_this<AddressCounter> {
public:
    explicit AddressCounter(int maxPerAddress) : m_max(maxPerAddress) {}
    // A token that releases its slot when destroyed; null when the address is at its limit.
    std::shared_ptr<void> acquire(const std::string& address);

private:
    std::mutex m_mutex;
    std::map<std::string, int> m_counts;
    int m_max;
};

struct SessionSetup; // what every session of one server shares (private to ws_server.cpp)

class WsServer : public std::enable_shared_from_this<WsServer> {
public:
    WsServer(boost::asio::io_context& io, const Limits& limits, std::vector<std::string> paths,
             HandlerFactory factory);

    // Binds and listens; throws std::runtime_error with a clear message when it cannot.
    void listen(const std::string& host, unsigned short port);
    // Plain GET requests go to `handler` (set before start()).
    void setHttpHandler(HttpHandler handler) { m_http = std::move(handler); }
    // Every plain request goes to `handler` instead (set before start()); bodies over
    // `maxBodyBytes` are answered 413 without calling it.
    void setHttpRequestHandler(HttpRequestHandler handler, std::size_t maxBodyBytes) {
        m_httpRequests = std::move(handler);
        m_maxHttpBody = maxBodyBytes;
    }
    // Every WebSocket connection adds its message bytes to `counters` (set before start()).
    void setTrafficCounters(std::shared_ptr<TrafficCounters> counters) {
        m_traffic = std::move(counters);
    }
    // Serves TLS only (wss://, https://) with `context` (makeServerTlsContext; set before start()).
    void setTls(TlsContext context) { m_tls = std::move(context); }
    void setLog(ServerLog log) { m_log = std::move(log); }
    void start();
    void stop();
    unsigned short port() const;

private:
    void doAccept();

    boost::asio::io_context& m_io;
    Limits m_limits;
    std::vector<std::string> m_paths;
    HandlerFactory m_factory;
    HttpHandler m_http;
    HttpRequestHandler m_httpRequests;
    std::size_t m_maxHttpBody = 4 * 1024;
    std::shared_ptr<TrafficCounters> m_traffic;
    TlsContext m_tls;
    ServerLog m_log;
    boost::asio::ip::tcp::acceptor m_acceptor;
    std::shared_ptr<AddressCounter> m_addresses;
    std::shared_ptr<const SessionSetup> m_setup; // made by start()
};

} // namespace goblin::net
