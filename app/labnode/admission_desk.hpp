// The hello desk: every connection's first message. Checks protocol and catalog versions, admits a
// researcher by token (only its hash is stored) or a volunteer by identity and capabilities, and
// answers with the welcome (limits in force; a new volunteer's id and secret). Core thread only.
#pragma once

#include <random>

#include "goblin/net/limits.hpp"
#include "goblin/net/message.hpp"
#include "goblin/net/messages/handshake.hpp"
#include "node_context.hpp"
#include "peer_registry.hpp"

namespace goblin::labnode {

class AdmissionDesk {
public:
    AdmissionDesk(NodeContext& context, PeerRegistry& peers, net::Limits limits);

    // The first message of `peer`. True when it was admitted (the peer is ready); otherwise the
    // connection is being closed with the reason.
    bool onHello(Peer& peer, const net::Message& message);

private:
    Expected<void> admitResearcher(Peer& peer, const boost::json::object& hello);
    Expected<void> admitVolunteer(Peer& peer, const boost::json::object& hello,
                                  net::Welcome& welcome);

    NodeContext& m_context;
    PeerRegistry& m_peers;
    net::Limits m_limits;
    std::mt19937_64 m_random;
};

} // namespace goblin::labnode
