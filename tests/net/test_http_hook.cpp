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

#include "goblin/net/ws_server.hpp"

using goblin::net::HttpAnswer;
using goblin::net::HttpHandler;
using goblin::net::HttpReply;
using goblin::net::Limits;
using goblin::net::WsServer;

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;

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

// A WsServer on an ephemeral loopback port, run by one thread, and a "core" thread for handlers.
class Server {
public:
    explicit Server(std::optional<HttpHandler> handler) {
        m_server =
            std::make_shared<WsServer>(m_io, Limits{}, std::vector<std::string>{"/v1/volunteer"},
                                       [](const auto&, const std::string&) { return nullptr; });
        if (handler)
            m_server->setHttpHandler(std::move(*handler));
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

QTEST_APPLESS_MAIN(TestHttpHook)
#include "test_http_hook.moc"
