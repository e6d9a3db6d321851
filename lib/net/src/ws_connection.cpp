#include "goblin/net/ws_connection.hpp"

#include <algorithm>

#include <array>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/websocket/error.hpp>

#include "goblin/net/close_reason.hpp"
#include "ws_stream.hpp"

namespace goblin::net {

namespace {

// Read-buffer capacity kept between messages (control frames and small tensors fit).
constexpr std::size_t kKeptReadBufferBytes = std::size_t{1} << 20;

} // namespace

namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;
namespace asio = boost::asio;

WsConnection::WsConnection(WsStream stream, const Limits& limits, std::string peerAddress)
    : m_ws(std::make_unique<WsStream>(std::move(stream))), m_limits(limits),
      m_peerAddress(std::move(peerAddress)), m_assembler(limits),
      m_firstMessageTimer(m_ws->executor()) {}

WsConnection::~WsConnection() = default;

void WsConnection::start(std::shared_ptr<ConnectionHandler> handler) {
    asio::dispatch(m_ws->executor(), [self = shared_from_this(), handler]() mutable {
        self->m_handler = std::move(handler);
        self->m_firstMessageTimer.expires_after(self->m_limits.handshakeTimeout);
        self->m_firstMessageTimer.async_wait([weak = std::weak_ptr(self)](beast::error_code ec) {
            auto strong = weak.lock();
            if (ec || !strong || strong->m_sawMessage)
                return;
            strong->beginClose(Error{ErrorCode::Timeout, "no hello within the handshake timeout"});
        });
        self->doRead();
    });
}

void WsConnection::send(Message message) {
    asio::post(m_ws->executor(), [self = shared_from_this(), message = std::move(message)] {
        self->enqueue(encodeMessage(message));
    });
}

void WsConnection::refuseTensorsUntilAllowed() {
    asio::dispatch(m_ws->executor(),
                   [self = shared_from_this()] { self->m_assembler.setTensorsAllowed(false); });
}

void WsConnection::allowTensors() {
    asio::post(m_ws->executor(), [self = shared_from_this()] {
        self->m_assembler.setTensorsAllowed(true);
        self->m_assembler.raiseControlLimit();
        // The read in flight was started under the old limit: the peer's next message (a graph
        // job's JSON, sent as soon as it is welcomed) may already take the raised one.
        self->m_ws->visit(
            [&](auto& ws) { ws.read_message_max(self->m_assembler.nextFrameLimit()); });
    });
}

void WsConnection::closeNormally() {
    asio::post(m_ws->executor(), [self = shared_from_this()] {
        self->beginClose(Error{ErrorCode::Internal, "goodbye"}, websocket::close_code::normal);
    });
}

void WsConnection::close(const Error& reason) {
    asio::post(m_ws->executor(), [self = shared_from_this(), reason] { self->beginClose(reason); });
}

void WsConnection::doRead() {
    m_ws->visit([this](auto& ws) {
        ws.read_message_max(m_assembler.nextFrameLimit());
        ws.async_read(m_buffer,
                      beast::bind_front_handler(&WsConnection::onRead, shared_from_this()));
    });
}

void WsConnection::onRead(beast::error_code ec, std::size_t) {
    if (ec) {
        // A close frame that arrived says why, even when our reply then failed because the peer
        // dropped the socket right after its close frame (EPIPE or a reset instead of `closed`).
        const websocket::close_reason peer =
            m_ws->visit([](auto& ws) -> websocket::close_reason { return ws.reason(); });
        if (ec == websocket::error::closed || peer.code != websocket::close_code::none) {
            finish(closeErrorFromPeer(peer.code, std::string(peer.reason.c_str())));
        } else if (ec == websocket::error::message_too_big) {
            finish(Error{ErrorCode::LimitExceeded, "a frame was over the size limit"});
        } else {
            finish(Error{ErrorCode::Internal, "connection lost: " + ec.message()});
        }
        return;
    }
    const FrameKind kind =
        m_ws->visit([](auto& ws) { return ws.got_binary(); }) ? FrameKind::Binary : FrameKind::Text;
    const auto data = m_buffer.cdata();
    if (m_traffic)
        m_traffic->bytesIn += data.size();
    auto result = m_assembler.onFrame(
        kind, std::span<const std::byte>(static_cast<const std::byte*>(data.data()), data.size()));
    m_buffer.consume(m_buffer.size());
    // The buffer grows to the largest frame (a tensor block); once its message is whole, give that
    // memory back, so an idle volunteer or node does not keep its largest message's size.
    if (result && *result && m_buffer.capacity() > kKeptReadBufferBytes)
        m_buffer.shrink_to_fit();
    if (!result) {
        beginClose(result.error());
        return;
    }
    if (*result && m_handler && !m_closing) {
        m_sawMessage = true;
        m_firstMessageTimer.cancel();
        m_handler->onMessage(std::move(**result));
    }
    if (!m_finished)
        doRead();
}

void WsConnection::enqueue(std::vector<OutgoingFrame> frames) {
    // Once a close is decided nothing new goes out: the peer must never see a message start
    // inside another one's tensor frames, or after the reason it was closed for.
    if (m_closing || m_finished || m_closeAfterWrites)
        return;
    for (auto& frame : frames)
        m_queue.push_back(std::move(frame));
    if (!m_writing)
        doWrite();
}

void WsConnection::doWrite() {
    if (m_queue.empty()) {
        m_writing = false;
        if (m_closeAfterWrites) {
            Error reason = *m_closeAfterWrites;
            m_closeAfterWrites.reset();
            beginClose(reason, m_closeCodeAfterWrites);
        }
        return;
    }
    m_writing = true;
    const OutgoingFrame& frame = m_queue.front();
    auto handler = beast::bind_front_handler(&WsConnection::onWrite, shared_from_this());
    if (frame.kind == FrameKind::Text) {
        m_ws->visit([&](auto& ws) {
            ws.text(true);
            ws.async_write(asio::buffer(frame.text), std::move(handler));
        });
        return;
    }
    std::array<asio::const_buffer, 2> buffers{
        asio::buffer(frame.prefix),
        asio::buffer(frame.tensor->bytes().data(), frame.tensor->byteSize())};
    m_ws->visit([&](auto& ws) {
        ws.binary(true);
        ws.async_write(buffers, std::move(handler));
    });
}

void WsConnection::onWrite(beast::error_code ec, std::size_t bytes) {
    if (ec) {
        m_writing = false;
        m_queue.clear();
        finish(Error{ErrorCode::Internal, "write failed: " + ec.message()});
        return;
    }
    if (m_traffic)
        m_traffic->bytesOut += bytes;
    m_queue.pop_front();
    doWrite();
}

void WsConnection::beginClose(const Error& reason) {
    beginClose(reason, static_cast<websocket::close_code>(closeCodeFor(reason.code)));
}

void WsConnection::beginClose(const Error& reason, websocket::close_code code) {
    if (m_closing || m_finished)
        return;
    if (m_writing) {
        // Beast allows one write at a time: finish the message in flight (its control frame and
        // all its tensor frames, so the peer can read it to the end), drop the rest, then close.
        auto nextMessage = std::find_if(m_queue.begin() + 1, m_queue.end(), [](const auto& frame) {
            return frame.kind == FrameKind::Text;
        });
        m_queue.erase(nextMessage, m_queue.end());
        m_closeAfterWrites = reason;
        m_closeCodeAfterWrites = code;
        return;
    }
    m_closing = true;
    websocket::close_reason frame;
    frame.code = code;
    frame.reason = code == websocket::close_code::normal ? std::string() : closeReasonFor(reason);
    m_ws->visit([&](auto& ws) {
        ws.async_close(frame, [self = shared_from_this(), reason](beast::error_code) {
            self->finish(reason);
        });
    });
}

void WsConnection::finish(const Error& reason) {
    if (m_finished)
        return;
    m_finished = true;
    m_firstMessageTimer.cancel();
    beast::error_code ignored;
    m_ws->tcp().socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    m_ws->tcp().close();
    if (auto handler = std::move(m_handler))
        handler->onClosed(reason);
}

} // namespace goblin::net
