// TLS in the Beast transport over real loopback sockets, with a CA and certificates this test
// makes (test_pki.hpp): the TLS contexts refuse bad files, a wss:// client that trusts the CA
// talks to a TLS WsServer (WebSocket and HTTP), and a wrong CA, a wrong host name, a plain client
// on the TLS port, a TLS client on a plain port and a silent peer are all refused. One io_context
// thread runs the server and its clients; every wait is bounded.
#include <QtTest/QtTest>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/json.hpp>

#include "goblin/net/tls_context.hpp"
#include "goblin/net/ws_client.hpp"
#include "goblin/net/ws_server.hpp"
#include "test_pki.hpp"

using goblin::Error;
using goblin::ErrorCode;
using goblin::Expected;
using goblin::net::ConnectionHandler;
using goblin::net::connectWebSocket;
using goblin::net::Limits;
using goblin::net::makeClientTlsContext;
using goblin::net::makeServerTlsContext;
using goblin::net::Message;
using goblin::net::TlsContext;
using goblin::net::WsConnection;
using goblin::net::WsServer;
using goblin::net::WsUrl;

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

constexpr auto kWait = std::chrono::seconds(10);
const std::string kPath = "/v1/volunteer";

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// The CA, a second CA nobody trusts, and server certificates: one for localhost/127.0.0.1 and one
// for another name, in a temporary folder.
class Pki {
public:
    Pki() : m_dir(fs::temp_directory_path() / ("goblin-tls-" + std::to_string(::getpid()))) {
        fs::create_directories(m_dir);
        const auto ca = goblin::test::makeCertificate("Goblin Test CA", nullptr);
        const auto otherCa = goblin::test::makeCertificate("Someone Else's CA", nullptr);
        const auto server =
            goblin::test::makeCertificate("localhost", &ca, "DNS:localhost,IP:127.0.0.1");
        const auto elsewhere =
            goblin::test::makeCertificate("lab.example.org", &ca, "DNS:lab.example.org");
        goblin::test::writePem(ca, m_dir, "ca");
        goblin::test::writePem(otherCa, m_dir, "other-ca");
        goblin::test::writePem(server, m_dir, "server");
        goblin::test::writePem(elsewhere, m_dir, "elsewhere");
    }
    ~Pki() {
        std::error_code ignored;
        fs::remove_all(m_dir, ignored);
    }
    std::string file(const std::string& name) const { return (m_dir / name).string(); }

private:
    fs::path m_dir;
};

// What one connection's handler saw; the server's handlers echo every message.
class Recorder : public ConnectionHandler {
public:
    explicit Recorder(std::weak_ptr<WsConnection> echoTo = {}) : m_echoTo(std::move(echoTo)) {}
    void onMessage(Message message) override {
        if (auto connection = m_echoTo.lock())
            connection->send(message);
        std::lock_guard lock(m_mutex);
        m_messages.push_back(std::move(message));
        m_changed.notify_all();
    }
    void onClosed(const Error&) override {}
    std::optional<Message> waitForMessage() {
        std::unique_lock lock(m_mutex);
        if (!m_changed.wait_for(lock, kWait, [&] { return !m_messages.empty(); }))
            return std::nullopt;
        return m_messages.front();
    }

private:
    std::weak_ptr<WsConnection> m_echoTo;
    std::mutex m_mutex;
    std::condition_variable m_changed;
    std::vector<Message> m_messages;
};

// A WsServer on 127.0.0.1:<ephemeral> (TLS when given a context), its log, and the io_context
// thread that runs it and its clients.
class Loopback {
public:
    explicit Loopback(TlsContext tls, Limits limits = {}) {
        m_server = std::make_shared<WsServer>(
            m_io, limits, std::vector<std::string>{kPath},
            [](const std::shared_ptr<WsConnection>& connection, const std::string&) {
                connection->allowTensors();
                return std::make_shared<Recorder>(connection);
            });
        m_server->setTls(std::move(tls));
        m_server->setLog([this](const std::string& line) {
            std::lock_guard lock(m_mutex);
            m_log.push_back(line);
            m_changed.notify_all();
        });
        m_server->listen("127.0.0.1", 0);
        m_server->start();
        m_thread = std::thread([this] { m_io.run(); });
    }
    ~Loopback() {
        m_server->stop();
        m_work.reset();
        m_io.stop();
        m_thread.join();
        m_clients.clear();
        m_server.reset();
    }
    Loopback(const Loopback&) = delete;
    Loopback& operator=(const Loopback&) = delete;

    unsigned short port() const { return m_server->port(); }

    Expected<std::shared_ptr<WsConnection>> connect(const std::string& url, TlsContext tls) {
        using Result = Expected<std::shared_ptr<WsConnection>>;
        auto parsed = goblin::net::parseWsUrl(url);
        if (!parsed)
            return tl::unexpected(parsed.error());
        auto promise = std::make_shared<std::promise<Result>>();
        auto future = promise->get_future();
        connectWebSocket(
            m_io, *parsed, kPath, Limits{},
            [promise](Result result) { promise->set_value(std::move(result)); }, std::move(tls));
        if (future.wait_for(kWait) != std::future_status::ready)
            return goblin::makeError(ErrorCode::Timeout, "connect did not complete");
        Result result = future.get();
        if (result)
            m_clients.push_back(*result);
        return result;
    }

    // The first log line containing `part`, or nothing within the wait.
    std::optional<std::string> waitForLog(const std::string& part) {
        std::unique_lock lock(m_mutex);
        std::optional<std::string> found;
        m_changed.wait_for(lock, kWait, [&] {
            for (const std::string& line : m_log)
                if (contains(line, part))
                    found = line;
            return found.has_value();
        });
        return found;
    }

private:
    asio::io_context m_io;
    asio::executor_work_guard<asio::io_context::executor_type> m_work{m_io.get_executor()};
    std::shared_ptr<WsServer> m_server;
    std::vector<std::shared_ptr<WsConnection>> m_clients;
    std::thread m_thread;
    std::mutex m_mutex;
    std::condition_variable m_changed;
    std::vector<std::string> m_log;
};

std::string urlOf(const std::string& scheme, const std::string& host, unsigned short port) {
    std::string url = scheme;
    return url.append("://").append(host).append(":").append(std::to_string(port));
}

TlsContext serverContext(const Pki& pki, const std::string& stem) {
    auto context = makeServerTlsContext(pki.file(stem + ".crt"), pki.file(stem + ".key"));
    if (!context)
        throw std::runtime_error(context.error().message);
    return *context;
}

TlsContext clientContext(const std::string& caFile) {
    auto context = makeClientTlsContext(caFile);
    if (!context)
        throw std::runtime_error(context.error().message);
    return *context;
}

} // namespace

class TestTlsTransport : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void serverContextRefusesBadFiles();
    void clientContextRefusesAMissingCaFile();
    void verifiedClientEchoesOverTls();
    void verifiedClientByHostName();
    void httpsAnswersHealthz();
    void wrongCaIsRefused();
    void wrongHostNameIsRefused();
    void plainClientOnTlsPortIsRefusedAndLogged();
    void tlsClientOnPlainPortFails();
    void silentPeerIsDroppedAfterTheHandshakeTimeout();

private:
    Pki m_pki;
};

void TestTlsTransport::serverContextRefusesBadFiles() {
    const std::string missing = m_pki.file("missing.crt");
    auto noCert = makeServerTlsContext(missing, m_pki.file("server.key"));
    QVERIFY(!noCert);
    QVERIFY2(contains(noCert.error().message, missing), noCert.error().message.c_str());
    auto noKey = makeServerTlsContext(m_pki.file("server.crt"), m_pki.file("missing.key"));
    QVERIFY(!noKey);
    QVERIFY2(contains(noKey.error().message, "missing.key"), noKey.error().message.c_str());
    // A key file given as the certificate: not a certificate.
    auto swapped = makeServerTlsContext(m_pki.file("server.key"), m_pki.file("server.key"));
    QVERIFY(!swapped);
    QVERIFY2(contains(swapped.error().message, "certificate"), swapped.error().message.c_str());
    auto mismatched = makeServerTlsContext(m_pki.file("server.crt"), m_pki.file("ca.key"));
    QVERIFY(!mismatched);
    QVERIFY2(contains(mismatched.error().message, "does not match"),
             mismatched.error().message.c_str());
    QVERIFY(makeServerTlsContext(m_pki.file("server.crt"), m_pki.file("server.key")));
}

void TestTlsTransport::clientContextRefusesAMissingCaFile() {
    auto missing = makeClientTlsContext(m_pki.file("nowhere.pem"));
    QVERIFY(!missing);
    QVERIFY2(contains(missing.error().message, "nowhere.pem"), missing.error().message.c_str());
    auto notPem = makeClientTlsContext(m_pki.file("server.key"));
    QVERIFY(!notPem);
    QVERIFY(makeClientTlsContext(m_pki.file("ca.crt")));
    QVERIFY(makeClientTlsContext("")); // the system trust store
}

void TestTlsTransport::verifiedClientEchoesOverTls() {
    Loopback loop(serverContext(m_pki, "server"));
    auto client =
        loop.connect(urlOf("wss", "127.0.0.1", loop.port()), clientContext(m_pki.file("ca.crt")));
    QVERIFY2(client.has_value(), client ? "" : client.error().message.c_str());
    auto recorder = std::make_shared<Recorder>();
    (*client)->start(recorder);
    (*client)->send(Message{json::object{{"type", "ping"}, {"id", 7}}, {}});
    const auto echoed = recorder->waitForMessage();
    QVERIFY(echoed.has_value());
    QCOMPARE(echoed->type(), std::string("ping"));
}

void TestTlsTransport::verifiedClientByHostName() {
    Loopback loop(serverContext(m_pki, "server"));
    auto client =
        loop.connect(urlOf("wss", "localhost", loop.port()), clientContext(m_pki.file("ca.crt")));
    QVERIFY2(client.has_value(), client ? "" : client.error().message.c_str());
}

void TestTlsTransport::httpsAnswersHealthz() {
    Loopback loop(serverContext(m_pki, "server"));
    asio::io_context io;
    asio::ssl::context context(asio::ssl::context::tls_client);
    context.load_verify_file(m_pki.file("ca.crt"));
    context.set_verify_mode(asio::ssl::verify_peer);
    beast::ssl_stream<beast::tcp_stream> stream(io, context);
    beast::get_lowest_layer(stream).expires_after(kWait);
    beast::get_lowest_layer(stream).connect(
        asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), loop.port()));
    stream.handshake(asio::ssl::stream_base::client);
    http::request<http::string_body> request(http::verb::get, "/healthz", 11);
    request.set(http::field::host, "127.0.0.1");
    http::write(stream, request);
    beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(stream, buffer, response);
    QCOMPARE(response.result_int(), 200u);
    QCOMPARE(response.body(), std::string("ok\n"));
}

void TestTlsTransport::wrongCaIsRefused() {
    Loopback loop(serverContext(m_pki, "server"));
    auto client = loop.connect(urlOf("wss", "127.0.0.1", loop.port()),
                               clientContext(m_pki.file("other-ca.crt")));
    QVERIFY(!client.has_value());
    QVERIFY2(contains(client.error().message, "TLS handshake"), client.error().message.c_str());
    QVERIFY2(contains(client.error().message, "certificate verify failed"),
             client.error().message.c_str());
    // The server saw the handshake fail too (the client's alert).
    QVERIFY(loop.waitForLog("TLS handshake with 127.0.0.1 failed").has_value());
}

void TestTlsTransport::wrongHostNameIsRefused() {
    // Signed by the trusted CA, but for lab.example.org, not 127.0.0.1.
    Loopback loop(serverContext(m_pki, "elsewhere"));
    auto client =
        loop.connect(urlOf("wss", "127.0.0.1", loop.port()), clientContext(m_pki.file("ca.crt")));
    QVERIFY(!client.has_value());
    QVERIFY2(contains(client.error().message, "certificate verify failed"),
             client.error().message.c_str());
}

void TestTlsTransport::plainClientOnTlsPortIsRefusedAndLogged() {
    Loopback loop(serverContext(m_pki, "server"));
    auto client = loop.connect(urlOf("ws", "127.0.0.1", loop.port()), nullptr);
    QVERIFY(!client.has_value());
    QVERIFY2(contains(client.error().message, "WebSocket handshake"),
             client.error().message.c_str());
    const auto line = loop.waitForLog("refused a plain (non-TLS) connection from 127.0.0.1");
    QVERIFY(line.has_value());
}

void TestTlsTransport::tlsClientOnPlainPortFails() {
    Loopback loop(nullptr);
    auto client =
        loop.connect(urlOf("wss", "127.0.0.1", loop.port()), clientContext(m_pki.file("ca.crt")));
    QVERIFY(!client.has_value());
    QVERIFY2(contains(client.error().message, "TLS handshake"), client.error().message.c_str());
}

void TestTlsTransport::silentPeerIsDroppedAfterTheHandshakeTimeout() {
    Limits limits;
    limits.handshakeTimeout = std::chrono::seconds(1);
    Loopback loop(serverContext(m_pki, "server"), limits);
    for (const std::string& opening : {std::string(), std::string("\x16\x03\x01", 3)}) {
        // Nothing at all, then the first bytes of a TLS record and nothing more.
        asio::io_context io;
        asio::ip::tcp::socket socket(io);
        socket.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), loop.port()));
        if (!opening.empty())
            asio::write(socket, asio::buffer(opening));
        auto read = std::async(std::launch::async, [&socket] {
            char byte = 0;
            beast::error_code ec;
            socket.read_some(asio::buffer(&byte, 1), ec);
            return ec;
        });
        const bool ended = read.wait_for(kWait) == std::future_status::ready;
        if (!ended) {
            socket.close();
            QFAIL("the server kept a silent peer past the handshake timeout");
        }
        const beast::error_code ec = read.get();
        QVERIFY2(ec == asio::error::eof || ec == asio::error::connection_reset,
                 ec.message().c_str());
    }
}

QTEST_APPLESS_MAIN(TestTlsTransport)
#include "test_tls_transport.moc"
