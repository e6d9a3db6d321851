// Bridges one WebSocket connection to the Coordinator: every event is posted to the core thread,
// tagged with the connection's peer id. Called on the connection's strand.
#pragma once

#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "node/coordinator.hpp"

namespace goblin::labnode {

class NodeConnection final : public net::ConnectionHandler {
public:
    NodeConnection(boost::asio::io_context& core, Coordinator& coordinator, std::uint64_t peer)
        : m_core(core), m_coordinator(coordinator), m_peer(peer) {}

    void onMessage(net::Message message) override {
        boost::asio::post(m_core, [&coordinator = m_coordinator, peer = m_peer,
                                   message = std::move(message)]() mutable {
            coordinator.onMessage(peer, std::move(message));
        });
    }

    void onClosed(const Error& reason) override {
        boost::asio::post(m_core, [&coordinator = m_coordinator, peer = m_peer, reason] {
            coordinator.onClosed(peer, reason);
        });
    }

private:
    boost::asio::io_context& m_core;
    Coordinator& m_coordinator;
    std::uint64_t m_peer;
};

} // namespace goblin::labnode
