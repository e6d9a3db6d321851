// WsServer's plain-HTTP hook over real loopback sockets: a server on one io_context thread, a
// handler that answers from a second ("core") thread, and a blocking Beast client. Every wait is
// bounded by the client's socket timeout.
#include <QtTest/QtTest>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json.hpp>

#include "goblin/net/ws_server.hpp"

using goblin::net::ConnectionHandler;
using goblin::net::HttpAnswer;
using goblin::net::HttpHandler;
using goblin::net::HttpReply;
using goblin::net::Limits;
using goblin::net::Message;
using goblin::net::TrafficCounters;
using goblin::net::WsConnection;
using goblin::net::WsServer;

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace websocket = boost::beast::websocket;

namespace {

struct Response {
    unsigned status = 0;
    std::string contentType;
    std::string body;
};

// One request on a fresh connection; nothing when the server closed without an answer.
std::optional<Response> fetch(unsigned short port, const std::string& target,
                              http::verb verb = http::verb::get) {
    asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(10));
    beast::error_code ec;
    stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    if (ec)
        return std::nullopt;
    http::request<http::string_body> request(verb, target, 11);
    request.set(http::field::host, "127.0.0.1");
    http::write(stream, request, ec);
    if (ec)
        return std::nullopt;
    beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(stream, buffer, response, ec);
    if (ec)
        return std::nullopt;
    return Response{response.result_int(), std::string(response[http::field::content_type]),
                    response.body()};
}

// Sends every message straight back.
class Echo : public ConnectionHandler {
public:
    explicit Echo(std::weak_ptr<WsConnection> connection) : m_connection(std::move(connection)) {}
    void onMessage(Message message) override {
        if (auto connection = m_connection.lock())
            connection->send(std::move(message));
    }
    void onClosed(const goblin::Error&) override {}

private:
    std::weak_ptr<WsConnection> m_connection;
};

// A WsServer on an ephemeral loopback port, run by one thread, and a "core" thread for handlers.
class Server {
public:
    explicit Server(std::optional<HttpHandler> handler,
                    std::shared_ptr<TrafficCounters> traffic = nullptr) {
        m_server = std::make_shared<WsServer>(
            m_io, Limits{}, std::vector<std::string>{"/v1/volunteer"},
            [](const std::shared_ptr<WsConnection>& connection, const std::string&) {
                return std::make_shared<Echo>(connection);
            });
        if (handler)
            m_server->setHttpHandler(std::move(*handler));
        if (traffic)
            m_server->setTrafficCounters(std::move(traffic));
        m_server->listen("127.0.0.1", 0);
        m_server->start();
        m_thread = std::thread([this] { m_io.run(); });
        m_coreThread = std::thread([this] { core.run(); });
    }
    ~Server() {
        m_server->stop();
        m_work.reset();
        m_coreWork.reset();
        m_io.stop();
        core.stop();
        m_thread.join();
        m_coreThread.join();
    }
    unsigned short port() const { return m_server->port(); }

    asio::io_context core;

private:
    asio::io_context m_io;
    asio::executor_work_guard<asio::io_context::executor_type> m_work{m_io.get_executor()};
    asio::executor_work_guard<asio::io_context::executor_type> m_coreWork{core.get_executor()};
    std::shared_ptr<WsServer> m_server;
    std::thread m_thread;
    std::thread m_coreThread;
};

} // namespace

class TestHttpHook : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void withoutHandlerHealthzIsOkAndTheRestNotFound();
    void handlerAnswersFromAnotherThread();
    void handlerSeesThePathWithoutQuery();
    void droppedReplyClosesTheConnection();
    void nonGetIsNotFoundAndNeverReachesTheHandler();
    void webSocketTrafficIsCounted();
};

void TestHttpHook::withoutHandlerHealthzIsOkAndTheRestNotFound() {
    Server server(std::nullopt);
    const auto health = fetch(server.port(), "/healthz");
    QVERIFY(health.has_value());
    QCOMPARE(health->status, 200u);
    QCOMPARE(health->body, std::string("ok\n"));
    const auto metrics = fetch(server.port(), "/metrics");
    QVERIFY(metrics.has_value());
    QCOMPARE(metrics->status, 404u);
}

void TestHttpHook::handlerAnswersFromAnotherThread() {
    std::thread::id answeredOn;
    std::mutex mutex;
    std::optional<Server> server;
    server.emplace(HttpHandler([&](const std::string& path, HttpReply reply) {
        asio::post(server->core, [&, path, reply] {
            {
                std::lock_guard lock(mutex);
                answeredOn = std::this_thread::get_id();
            }
            if (path == "/metrics")
                return reply(HttpAnswer{200, "text/plain; version=0.0.4", "goblin_up 1\n"});
            if (path == "/healthz")
                return reply(HttpAnswer{503, "text/plain", "database cannot commit\n"});
            reply(HttpAnswer{});
        });
    }));
    const auto metrics = fetch(server->port(), "/metrics");
    QVERIFY(metrics.has_value());
    QCOMPARE(metrics->status, 200u);
    QCOMPARE(metrics->contentType, std::string("text/plain; version=0.0.4"));
    QCOMPARE(metrics->body, std::string("goblin_up 1\n"));
    {
        std::lock_guard lock(mutex);
        QVERIFY(answeredOn != std::thread::id{});
        QVERIFY(answeredOn != std::this_thread::get_id());
    }
    // The handler decides /healthz once it is set.
    const auto health = fetch(server->port(), "/healthz");
    QVERIFY(health.has_value());
    QCOMPARE(health->status, 503u);
    QCOMPARE(health->body, std::string("database cannot commit\n"));
    const auto unknown = fetch(server->port(), "/nothing-here");
    QVERIFY(unknown.has_value());
    QCOMPARE(unknown->status, 404u);
    server.reset();
}

void TestHttpHook::handlerSeesThePathWithoutQuery() {
    std::mutex mutex;
    std::vector<std::string> seen;
    Server server(HttpHandler([&](const std::string& path, HttpReply reply) {
        {
            std::lock_guard lock(mutex);
            seen.push_back(path);
        }
        reply(HttpAnswer{200, "text/html; charset=utf-8", "<p>hi</p>"});
    }));
    const auto status = fetch(server.port(), "/status?refresh=1");
    QVERIFY(status.has_value());
    QCOMPARE(status->status, 200u);
    QCOMPARE(status->contentType, std::string("text/html; charset=utf-8"));
    std::lock_guard lock(mutex);
    QCOMPARE(seen, std::vector<std::string>{"/status"});
}

void TestHttpHook::droppedReplyClosesTheConnection() {
    Server server(HttpHandler([](const std::string&, HttpReply) {}));
    QVERIFY(!fetch(server.port(), "/metrics").has_value());
}

void TestHttpHook::nonGetIsNotFoundAndNeverReachesTheHandler() {
    std::atomic<int> calls{0};
    Server server(HttpHandler([&](const std::string&, HttpReply reply) {
        ++calls;
        reply(HttpAnswer{200, "text/plain", "ok\n"});
    }));
    const auto post = fetch(server.port(), "/metrics", http::verb::post);
    QVERIFY(post.has_value());
    QCOMPARE(post->status, 404u);
    const auto get = fetch(server.port(), "/metrics");
    QVERIFY(get.has_value());
    QCOMPARE(get->status, 200u);
    QCOMPARE(calls.load(), 1);
}

void TestHttpHook::webSocketTrafficIsCounted() {
    auto traffic = std::make_shared<TrafficCounters>();
    Server server(std::nullopt, traffic);
    asio::io_context io;
    websocket::stream<beast::tcp_stream> ws(io);
    beast::get_lowest_layer(ws).expires_after(std::chrono::seconds(10));
    beast::get_lowest_layer(ws).connect(
        asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
    ws.handshake("127.0.0.1", "/v1/volunteer");
    const std::string text = boost::json::serialize(boost::json::object{{"type", "ping-me"}});
    ws.text(true);
    ws.write(asio::buffer(text));
    beast::flat_buffer buffer;
    ws.read(buffer); // the echo: written by the server, so counted before it left
    const std::string echoed = beast::buffers_to_string(buffer.data());
    QCOMPARE(boost::json::parse(echoed), boost::json::parse(text));
    QCOMPARE(traffic->bytesIn.load(), std::uint64_t{text.size()});
    // The write handler runs after the bytes left: wait for it, boundedly.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (traffic->bytesOut.load() < echoed.size() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    QCOMPARE(traffic->bytesOut.load(), std::uint64_t{echoed.size()});
    beast::error_code ignored;
    ws.close(websocket::close_code::normal, ignored);
}

QTEST_APPLESS_MAIN(TestHttpHook)
#include "test_http_hook.moc"
