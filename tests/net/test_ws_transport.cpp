// In-process tests of the Beast transport over real loopback sockets: a WsServer with echo handlers
// and connectWebSocket clients on one io_context run by one thread. Every wait is bounded.
#include <QtTest/QtTest>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json.hpp>

#include "goblin/net/ws_client.hpp"
#include "goblin/net/ws_server.hpp"

using goblin::Error;
using goblin::ErrorCode;
using goblin::Expected;
using goblin::core::DType;
using goblin::core::Shape;
using goblin::core::Tensor;
using goblin::net::ConnectionHandler;
using goblin::net::connectWebSocket;
using goblin::net::Limits;
using goblin::net::Message;
using goblin::net::WsConnection;
using goblin::net::WsServer;
using goblin::net::WsUrl;

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;
namespace json = boost::json;

namespace {

constexpr auto kWait = std::chrono::seconds(10);
const std::string kPath = "/v1/volunteer";

Tensor randomTensor(DType dtype, Shape shape, unsigned seed) {
    Tensor tensor = Tensor::allocate(dtype, std::move(shape)).value();
    std::mt19937 random(seed);
    std::uniform_real_distribution<double> uniform(0.5, 1000.0);
    const auto count = static_cast<std::size_t>(tensor.elementCount());
    for (std::size_t i = 0; i < count; ++i) {
        const double value = (i % 3 == 0 ? -1.0 : 1.0) * uniform(random);
        if (dtype == DType::F32)
            tensor.values<float>()[i] = static_cast<float>(value);
        else if (dtype == DType::F64)
            tensor.values<double>()[i] = value;
        else if (dtype == DType::I32)
            tensor.values<std::int32_t>()[i] = static_cast<std::int32_t>(value * 1000);
        else if (dtype == DType::I64)
            tensor.values<std::int64_t>()[i] = static_cast<std::int64_t>(value * 1e9);
        else
            tensor.bytes()[i] = std::byte(i % 2);
    }
    return tensor;
}

bool sameTensor(const Tensor& a, const Tensor& b) {
    return a.dtype() == b.dtype() && a.shape() == b.shape() && a.byteSize() == b.byteSize() &&
           std::memcmp(a.bytes().data(), b.bytes().data(), a.byteSize()) == 0;
}

// Records what one connection's handler saw. Called on the connection's strand, read by the test.
class RecordingHandler : public ConnectionHandler {
public:
    void onMessage(Message message) override {
        std::lock_guard lock(m_mutex);
        m_messages.push_back(std::move(message));
        m_changed.notify_all();
    }
    void onClosed(const Error& reason) override {
        std::lock_guard lock(m_mutex);
        ++m_closeCount;
        if (!m_closed)
            m_closed = reason;
        m_changed.notify_all();
    }

    // Message number `index` (0-based), or nothing when it did not come in time.
    std::optional<Message> waitForMessage(std::size_t index) {
        std::unique_lock lock(m_mutex);
        if (!m_changed.wait_for(lock, kWait, [&] { return m_messages.size() > index; }))
            return std::nullopt;
        return m_messages[index];
    }
    std::optional<Error> waitForClose() {
        std::unique_lock lock(m_mutex);
        m_changed.wait_for(lock, kWait, [&] { return m_closed.has_value(); });
        return m_closed;
    }
    int closeCount() {
        std::lock_guard lock(m_mutex);
        return m_closeCount;
    }
    std::size_t messageCount() {
        std::lock_guard lock(m_mutex);
        return m_messages.size();
    }

private:
    std::mutex m_mutex;
    std::condition_variable m_changed;
    std::vector<Message> m_messages;
    std::optional<Error> m_closed;
    int m_closeCount = 0;
};

// The server side: records and sends every message straight back.
class EchoHandler : public RecordingHandler {
public:
    explicit EchoHandler(std::weak_ptr<WsConnection> connection)
        : m_connection(std::move(connection)) {}
    void onMessage(Message message) override {
        RecordingHandler::onMessage(message);
        auto connection = m_connection.lock();
        if (!connection)
            return;
        const bool last = message.type() == "echo-and-close";
        connection->send(std::move(message));
        if (!last)
            return;
        // Closed while the echo is being written, then asked to send more (as a node that
        // quarantines a volunteer and still has a verdict for it): nothing may follow the echo.
        connection->close(Error{ErrorCode::Banned, "closed after the echo"});
        connection->send(Message{json::object{{"type", "late"}}, {}});
    }

private:
    std::weak_ptr<WsConnection> m_connection;
};

// The server's handlers in the order their connections were upgraded. Thread-safe.
class HandlerRegistry {
public:
    void add(std::shared_ptr<EchoHandler> handler) {
        std::lock_guard lock(m_mutex);
        m_handlers.push_back(std::move(handler));
        m_changed.notify_all();
    }
    std::shared_ptr<EchoHandler> waitFor(std::size_t index) {
        std::unique_lock lock(m_mutex);
        if (!m_changed.wait_for(lock, kWait, [&] { return m_handlers.size() > index; }))
            return nullptr;
        return m_handlers[index];
    }
    std::size_t count() {
        std::lock_guard lock(m_mutex);
        return m_handlers.size();
    }

private:
    std::mutex m_mutex;
    std::condition_variable m_changed;
    std::vector<std::shared_ptr<EchoHandler>> m_handlers;
};

struct Client {
    std::shared_ptr<WsConnection> connection;
    std::shared_ptr<RecordingHandler> handler;
};

// A server on 127.0.0.1:<ephemeral> and the io_context thread that runs it and its clients.
class Loopback {
public:
    explicit Loopback(const Limits& serverLimits)
        : m_guard(asio::make_work_guard(m_io)), m_registry(std::make_shared<HandlerRegistry>()) {
        m_server = std::make_shared<WsServer>(
            m_io, serverLimits, std::vector<std::string>{kPath},
            [registry = m_registry](const std::shared_ptr<WsConnection>& connection,
                                    const std::string&) {
                // The echo server trusts every peer: no hello stands before tensors here.
                connection->allowTensors();
                auto handler = std::make_shared<EchoHandler>(connection);
                registry->add(handler);
                return handler;
            });
        m_server->listen("127.0.0.1", 0);
        m_server->start();
        m_thread = std::thread([this] { m_io.run(); });
    }
    ~Loopback() {
        m_server->stop();
        m_guard.reset();
        m_io.stop();
        m_thread.join();
        // Dropped while the io_context still exists; pending handlers go with it.
        m_clients.clear();
        m_server.reset();
    }
    Loopback(const Loopback&) = delete;
    Loopback& operator=(const Loopback&) = delete;

    asio::io_context& io() { return m_io; }
    unsigned short port() const { return m_server->port(); }
    HandlerRegistry& serverHandlers() { return *m_registry; }

    // Connects and starts a client, or returns why it could not.
    Expected<Client> connect(const Limits& limits) {
        using Result = Expected<std::shared_ptr<WsConnection>>;
        auto promise = std::make_shared<std::promise<Result>>();
        auto future = promise->get_future();
        connectWebSocket(m_io, WsUrl{"127.0.0.1", std::to_string(port()), ""}, kPath, limits,
                         [promise](Result result) { promise->set_value(std::move(result)); });
        if (future.wait_for(kWait) != std::future_status::ready)
            return goblin::makeError(ErrorCode::Timeout, "connect did not complete");
        Result result = future.get();
        if (!result)
            return tl::unexpected(result.error());
        Client client{*result, std::make_shared<RecordingHandler>()};
        client.connection->start(client.handler);
        m_clients.push_back(client.connection);
        return client;
    }

private:
    asio::io_context m_io;
    asio::executor_work_guard<asio::io_context::executor_type> m_guard;
    std::shared_ptr<HandlerRegistry> m_registry;
    std::shared_ptr<WsServer> m_server;
    std::vector<std::shared_ptr<WsConnection>> m_clients;
    std::thread m_thread;
};

struct RawFrame {
    bool binary = false;
    std::string payload;
};

struct PeerClose {
    bool closedByPeer = false; // the read ended with a close frame (not a reset or timeout)
    std::uint16_t code = 0;
    std::string reason;
};

// A bare Beast client that sends raw frames (which WsConnection would never produce) and reports
// the close frame the server answered with.
class RawClient : public std::enable_shared_from_this<RawClient> {
public:
    RawClient(asio::io_context& io, unsigned short port, std::vector<RawFrame> frames)
        : m_ws(asio::make_strand(io)), m_port(port), m_frames(std::move(frames)) {}

    std::future<PeerClose> start() {
        auto future = m_result.get_future();
        m_ws.set_option(websocket::stream_base::timeout{std::chrono::seconds(5),
                                                        std::chrono::seconds(5), false});
        beast::get_lowest_layer(m_ws).expires_after(std::chrono::seconds(5));
        const asio::ip::tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), m_port);
        beast::get_lowest_layer(m_ws).async_connect(
            endpoint, [self = shared_from_this()](beast::error_code ec) {
                if (ec)
                    return self->done(PeerClose{});
                beast::get_lowest_layer(self->m_ws).expires_never();
                self->m_ws.async_handshake("127.0.0.1:" + std::to_string(self->m_port), kPath,
                                           [self](beast::error_code error) {
                                               if (error)
                                                   return self->done(PeerClose{});
                                               self->writeNext(0);
                                           });
            });
        return future;
    }

private:
    void writeNext(std::size_t index) {
        if (index == m_frames.size())
            return read();
        m_ws.binary(m_frames[index].binary);
        m_ws.async_write(asio::buffer(m_frames[index].payload),
                         [self = shared_from_this(), index](beast::error_code ec, std::size_t) {
                             if (ec)
                                 return self->read(); // the server may already be closing
                             self->writeNext(index + 1);
                         });
    }
    void read() {
        m_ws.async_read(m_buffer, [self = shared_from_this()](beast::error_code ec, std::size_t) {
            if (!ec)
                return self->read(); // not expected: the server sends nothing before closing
            PeerClose close;
            close.closedByPeer = ec == websocket::error::closed;
            close.code = static_cast<std::uint16_t>(self->m_ws.reason().code);
            close.reason = std::string(self->m_ws.reason().reason.c_str());
            self->done(close);
        });
    }
    void done(PeerClose close) {
        if (!m_reported) {
            m_reported = true;
            m_result.set_value(std::move(close));
        }
    }

    websocket::stream<beast::tcp_stream> m_ws;
    unsigned short m_port;
    std::vector<RawFrame> m_frames;
    beast::flat_buffer m_buffer;
    std::promise<PeerClose> m_result;
    bool m_reported = false;
};

std::optional<PeerClose> sendRaw(Loopback& loop, std::vector<RawFrame> frames) {
    auto client = std::make_shared<RawClient>(loop.io(), loop.port(), std::move(frames));
    auto future = client->start();
    if (future.wait_for(kWait) != std::future_status::ready)
        return std::nullopt;
    return future.get();
}

Limits clientLimits() {
    Limits limits;
    limits.handshakeTimeout = std::chrono::seconds(5);
    return limits;
}

// Sends a message with tensors and checks that the echo comes back intact.
bool roundTrips(Client& client, std::size_t replyIndex, unsigned seed) {
    const auto a = std::make_shared<const Tensor>(randomTensor(DType::F32, {37, 53}, seed));
    const auto b = std::make_shared<const Tensor>(randomTensor(DType::F64, {300, 200}, seed + 1));
    const auto c = std::make_shared<const Tensor>(randomTensor(DType::I64, {2, 3, 4}, seed + 2));
    client.connection->send(Message{
        json::object{{"type", "echo"}, {"id", static_cast<std::int64_t>(seed)}}, {a, b, c}});
    const auto reply = client.handler->waitForMessage(replyIndex);
    if (!reply) {
        qWarning("no echo arrived");
        return false;
    }
    if (reply->type() != "echo" ||
        reply->control.at("id").as_int64() != static_cast<std::int64_t>(seed) ||
        reply->tensors.size() != 3) {
        qWarning("the echo's control object or tensor count differs");
        return false;
    }
    return sameTensor(*reply->tensors[0], *a) && sameTensor(*reply->tensors[1], *b) &&
           sameTensor(*reply->tensors[2], *c);
}

} // namespace

class TestWsTransport : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void messageWithTensorsRoundTrips();
    void closeWhileWritingFinishesTheMessageAndSendsNothingMore();
    void controlFrameOverLimitCloses();
    void serverServesAfterMisbehavingClient();
    void aTrustedPeersFirstMessageMayTakeTheRaisedLimit();
    void unannouncedBinaryFrameClosesWithReason();
    void textFrameWhileTensorsDueClosesWithReason();
    void connectionsPerAddressAreLimited();
    void unknownPathIsRefused();
};

void TestWsTransport::messageWithTensorsRoundTrips() {
    Loopback loop{Limits{}};
    auto client = loop.connect(clientLimits());
    QVERIFY2(client.has_value(), client ? "" : client.error().message.c_str());
    QVERIFY(roundTrips(*client, 0, 11));
    // The server side saw the same message once.
    auto server = loop.serverHandlers().waitFor(0);
    QVERIFY(server != nullptr);
    const auto seen = server->waitForMessage(0);
    QVERIFY(seen.has_value());
    QCOMPARE(seen->tensors.size(), std::size_t{3});
    QCOMPARE(seen->tensors[1]->shape(), (Shape{300, 200}));
    // A second message on the same connection.
    QVERIFY(roundTrips(*client, 1, 21));
    QCOMPARE(client->handler->closeCount(), 0);
}

void TestWsTransport::closeWhileWritingFinishesTheMessageAndSendsNothingMore() {
    Loopback loop{Limits{}};
    auto client = loop.connect(clientLimits());
    QVERIFY2(client.has_value(), client ? "" : client.error().message.c_str());
    const auto a = std::make_shared<const Tensor>(randomTensor(DType::F64, {512, 512}, 3));
    const auto b = std::make_shared<const Tensor>(randomTensor(DType::F32, {64, 64}, 4));
    client->connection->send(Message{json::object{{"type", "echo-and-close"}}, {a, b}});
    const auto echo = client->handler->waitForMessage(0);
    QVERIFY2(echo.has_value(), "the echo in flight was not finished before the close");
    QCOMPARE(echo->tensors.size(), std::size_t{2});
    QVERIFY(sameTensor(*echo->tensors[0], *a) && sameTensor(*echo->tensors[1], *b));
    const auto closed = client->handler->waitForClose();
    QVERIFY(closed.has_value());
    QCOMPARE(closed->code, ErrorCode::Banned);
    QCOMPARE(client->handler->messageCount(), std::size_t{1}); // "late" never went out
}

void TestWsTransport::controlFrameOverLimitCloses() {
    Limits serverLimits;
    serverLimits.maxControlBytes = 1024;
    serverLimits.maxAuthenticatedControlBytes = 1024; // the echo server trusts every peer
    Loopback loop{serverLimits};
    auto client = loop.connect(clientLimits());
    QVERIFY2(client.has_value(), client ? "" : client.error().message.c_str());
    // Small enough to leave in one socket write, so the client is reading when the server closes.
    client->connection->send(
        Message{json::object{{"type", "hello"}, {"pad", std::string(2000, 'p')}}, {}});

    const auto clientSaw = client->handler->waitForClose();
    QVERIFY2(clientSaw.has_value(), "the client was not closed");
    QVERIFY2(clientSaw->code == ErrorCode::LimitExceeded, clientSaw->describe().c_str());

    auto server = loop.serverHandlers().waitFor(0);
    QVERIFY(server != nullptr);
    const auto serverSaw = server->waitForClose();
    QVERIFY(serverSaw.has_value());
    QVERIFY2(serverSaw->code == ErrorCode::LimitExceeded, serverSaw->describe().c_str());
    QCOMPARE(server->messageCount(), std::size_t{0}); // the oversized message was not delivered
    QCOMPARE(client->handler->closeCount(), 1);
}

void TestWsTransport::serverServesAfterMisbehavingClient() {
    Limits serverLimits;
    serverLimits.maxControlBytes = 1024;
    serverLimits.maxAuthenticatedControlBytes = 1024; // the echo server trusts every peer
    Loopback loop{serverLimits};
    auto bad = loop.connect(clientLimits());
    QVERIFY(bad.has_value());
    bad->connection->send(
        Message{json::object{{"type", "x"}, {"pad", std::string(2000, 'q')}}, {}});
    const auto badClose = bad->handler->waitForClose();
    QVERIFY(badClose.has_value());
    QCOMPARE(badClose->code, ErrorCode::LimitExceeded);

    auto good = loop.connect(clientLimits());
    QVERIFY2(good.has_value(), good ? "" : good.error().message.c_str());
    // Tensors are far over the control limit; only control frames are held to it.
    QVERIFY(roundTrips(*good, 0, 31));
    QCOMPARE(good->handler->closeCount(), 0);
}

void TestWsTransport::aTrustedPeersFirstMessageMayTakeTheRaisedLimit() {
    // The echo server allows tensors (and the authenticated control limit) as a peer connects,
    // while the peer's first read is already waiting under the greeting's limit: that read takes
    // the raised one, so a 2000-byte first message is echoed, not refused.
    Limits serverLimits;
    serverLimits.maxControlBytes = 1024;
    serverLimits.maxAuthenticatedControlBytes = 1 << 20;
    Loopback loop{serverLimits};
    auto client = loop.connect(clientLimits());
    QVERIFY2(client.has_value(), client ? "" : client.error().message.c_str());
    client->connection->send(
        Message{json::object{{"type", "echo"}, {"id", 7}, {"pad", std::string(2000, 'p')}}, {}});
    const auto echo = client->handler->waitForMessage(0);
    QVERIFY2(echo.has_value(), "the first message was not echoed");
    QCOMPARE(echo->control.at("pad").as_string().size(), std::size_t{2000});
    QCOMPARE(client->handler->closeCount(), 0);
}

void TestWsTransport::unannouncedBinaryFrameClosesWithReason() {
    Loopback loop{Limits{}};
    const auto close = sendRaw(loop, {RawFrame{true, std::string(100, '\x01')}});
    QVERIFY2(close.has_value(), "no close within the wait");
    QVERIFY(close->closedByPeer);
    QCOMPARE(close->code, std::uint16_t{1002});
    QVERIFY2(close->reason.starts_with("invalid_frame: "), close->reason.c_str());
    QVERIFY(close->reason.size() <= 123);
    auto server = loop.serverHandlers().waitFor(0);
    QVERIFY(server != nullptr);
    const auto serverSaw = server->waitForClose();
    QVERIFY(serverSaw.has_value());
    QCOMPARE(serverSaw->code, ErrorCode::InvalidFrame);
}

void TestWsTransport::textFrameWhileTensorsDueClosesWithReason() {
    Loopback loop{Limits{}};
    const auto close = sendRaw(loop, {RawFrame{false, R"({"type":"result","tensors":1})"},
                                      RawFrame{false, R"({"type":"hello"})"}});
    QVERIFY2(close.has_value(), "no close within the wait");
    QVERIFY(close->closedByPeer);
    QCOMPARE(close->code, std::uint16_t{1002});
    QVERIFY2(close->reason.starts_with("invalid_message: "), close->reason.c_str());
    auto server = loop.serverHandlers().waitFor(0);
    QVERIFY(server != nullptr);
    QVERIFY(server->waitForClose().has_value());
    QCOMPARE(server->messageCount(), std::size_t{0});
}

void TestWsTransport::connectionsPerAddressAreLimited() {
    Limits serverLimits;
    serverLimits.maxConnectionsPerAddress = 2;
    Loopback loop{serverLimits};
    auto first = loop.connect(clientLimits());
    QVERIFY2(first.has_value(), first ? "" : first.error().message.c_str());
    auto second = loop.connect(clientLimits());
    QVERIFY2(second.has_value(), second ? "" : second.error().message.c_str());
    QVERIFY(roundTrips(*first, 0, 41));
    QVERIFY(roundTrips(*second, 0, 51));

    auto third = loop.connect(clientLimits());
    QVERIFY2(!third.has_value(), "a third connection from one address was accepted");
    QVERIFY(third.error().code != ErrorCode::Timeout);
    QCOMPARE(loop.serverHandlers().count(), std::size_t{2});
    // The two admitted connections are unaffected.
    QVERIFY(roundTrips(*first, 1, 61));

    // Closing one frees its slot.
    first->connection->closeNormally();
    auto firstServer = loop.serverHandlers().waitFor(0);
    QVERIFY(firstServer != nullptr);
    QVERIFY(firstServer->waitForClose().has_value());
    QVERIFY(first->handler->waitForClose().has_value());
    auto fourth = loop.connect(clientLimits());
    QVERIFY2(fourth.has_value(), fourth ? "" : fourth.error().message.c_str());
    QVERIFY(roundTrips(*fourth, 0, 71));
}

void TestWsTransport::unknownPathIsRefused() {
    Loopback loop{Limits{}};
    using Result = Expected<std::shared_ptr<WsConnection>>;
    auto promise = std::make_shared<std::promise<Result>>();
    auto future = promise->get_future();
    connectWebSocket(loop.io(), WsUrl{"127.0.0.1", std::to_string(loop.port()), ""}, "/v1/nowhere",
                     clientLimits(),
                     [promise](Result result) { promise->set_value(std::move(result)); });
    QVERIFY(future.wait_for(kWait) == std::future_status::ready);
    QVERIFY(!future.get().has_value());
    QCOMPARE(loop.serverHandlers().count(), std::size_t{0});
}

QTEST_APPLESS_MAIN(TestWsTransport)
#include "test_ws_transport.moc"
