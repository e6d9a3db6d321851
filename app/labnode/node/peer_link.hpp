// A connected peer as the lab node's roles see it: send a message, close with a reason, say where
// it comes from. `WsPeerLink` is the real one over a WebSocket connection; tests fake it. send()
// and close() may be called from any thread (the real link posts to its connection's strand).
#pragma once

#include <memory>
#include <string>

#include "goblin/core/error.hpp"
#include "goblin/net/message.hpp"
#include "goblin/net/ws_connection.hpp"

namespace goblin::labnode {

class PeerLink {
public:
    virtual ~PeerLink() = default;
    virtual void send(net::Message message) = 0;
    virtual void close(const Error& reason) = 0;
    // After the hello: the peer may send tensors (before the welcome leaves).
    virtual void allowTensors() = 0;
    virtual std::string address() const = 0;
};

class WsPeerLink final : public PeerLink {
public:
    explicit WsPeerLink(std::shared_ptr<net::WsConnection> connection)
        : m_connection(std::move(connection)) {}
    void send(net::Message message) override { m_connection->send(std::move(message)); }
    void close(const Error& reason) override { m_connection->close(reason); }
    void allowTensors() override { m_connection->allowTensors(); }
    std::string address() const override { return m_connection->peerAddress(); }

private:
    std::shared_ptr<net::WsConnection> m_connection;
};

} // namespace goblin::labnode
