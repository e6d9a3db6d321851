// One WebSocket connection (either side, ws:// or wss://): a read loop feeding a MessageAssembler,
// a write queue with one async_write in flight, and a close with a reason. Lives on its own strand;
// send() and close() may be called from any thread (they post to the strand). The handler is
// called on the strand.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "goblin/core/bulk_memory.hpp"
#include "goblin/core/error.hpp"
#include "goblin/net/limits.hpp"
#include "goblin/net/message.hpp"
#include "goblin/net/message_assembler.hpp"

namespace goblin::net {

class ConnectionHandler {
public:
    virtual ~ConnectionHandler() = default;
    virtual void onMessage(Message message) = 0;
    // Called once when the connection ends, with why (a normal close is reported as well).
    virtual void onClosed(const Error& reason) = 0;
};

// Counts bytes that crossed the socket, for the wire-efficiency benchmark.
struct WireCounters {
    std::uint64_t bytesSent = 0;
    std::uint64_t bytesReceived = 0;
};

// WebSocket message payload bytes (frame headers not counted) of every connection that shares it,
// for the node's metrics. Thread-safe.
struct TrafficCounters {
    std::atomic<std::uint64_t> bytesIn{0};
    std::atomic<std::uint64_t> bytesOut{0};
};

class WsStream; // plain or TLS (lib/net/src/ws_stream.hpp)

class WsConnection : public std::enable_shared_from_this<WsConnection> {
public:
    WsConnection(WsStream stream, const Limits& limits, std::string peerAddress);
    ~WsConnection();

    // Starts reading; the first complete message must arrive within the handshake timeout.
    void start(std::shared_ptr<ConnectionHandler> handler);
    void send(Message message);
    // Closes with the error's close code and "<code>: <message>" as the reason.
    void close(const Error& reason);
    // Closes with 1000 (normal).
    void closeNormally();
    // Server side: connections start refusing tensor frames until the peer is authenticated;
    // allowTensors() also raises the control-frame limit to maxAuthenticatedControlBytes.
    void refuseTensorsUntilAllowed();
    void allowTensors();

    const std::string& peerAddress() const { return m_peerAddress; }
    // Adds this connection's message bytes to `counters`; call before start().
    void countTraffic(std::shared_ptr<TrafficCounters> counters) {
        m_traffic = std::move(counters);
    }

private:
    void doRead();
    void onRead(boost::beast::error_code ec, std::size_t bytes);
    void enqueue(std::vector<OutgoingFrame> frames);
    void doWrite();
    void onWrite(boost::beast::error_code ec, std::size_t bytes);
    void beginClose(const Error& reason);
    void beginClose(const Error& reason, boost::beast::websocket::close_code code);
    void finish(const Error& reason);

    std::unique_ptr<WsStream> m_ws;
    Limits m_limits;
    std::string m_peerAddress;
    MessageAssembler m_assembler;
    // A tensor frame grows it to tens of MiB: bulk memory, so its pages are huge ones.
    boost::beast::basic_flat_buffer<core::BulkAllocator<char>> m_buffer;
    boost::asio::steady_timer m_firstMessageTimer;
    std::deque<OutgoingFrame> m_queue;
    std::shared_ptr<ConnectionHandler> m_handler;
    std::shared_ptr<TrafficCounters> m_traffic;
    std::optional<Error> m_closeAfterWrites;
    boost::beast::websocket::close_code m_closeCodeAfterWrites{};
    bool m_sawMessage = false;
    bool m_writing = false;
    bool m_closing = false;
    bool m_finished = false;
};

} // namespace goblin::net
