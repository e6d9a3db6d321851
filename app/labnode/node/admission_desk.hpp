// The hello desk: every connection's first message. Checks protocol and catalog versions, admits a
// researcher by token (only its hash is stored) or a volunteer by identity and capabilities, and
// answers with the welcome (limits in force; a new volunteer's id and secret). New identities are
// rate-limited per network address; quarantined ones are refused; under the approved policy a
// volunteer waits, connected but idle, until lab staff approve it. Core thread only.
#pragma once

#include <boost/asio/steady_timer.hpp>

#include "goblin/net/limits.hpp"
#include "goblin/net/message.hpp"
#include "goblin/net/messages/handshake.hpp"
#include "node/node_context.hpp"
#include "node/peer_registry.hpp"
#include "node/trust_book.hpp"

namespace goblin::labnode {

enum class VolunteerPolicy { Open, Approved };

struct AdmissionSettings {
    net::Limits limits;
    int registrationsPerHour = 20; // new identities per network address
    VolunteerPolicy policy = VolunteerPolicy::Open;
};

class AdmissionDesk {
public:
    AdmissionDesk(NodeContext& context, PeerRegistry& peers, TrustBook& trust,
                  AdmissionSettings settings);

    // The first message of `peer`. True when it was admitted (the peer is ready); otherwise the
    // connection is being closed with the reason.
    bool onHello(Peer& peer, const net::Message& message);
    // Looks up lab staff's approvals for volunteers waiting: true when one may now work.
    bool recheckApprovals();

private:
    Expected<void> admitResearcher(Peer& peer, const boost::json::object& hello);
    Expected<void> admitVolunteer(Peer& peer, const boost::json::object& hello,
                                  net::Welcome& welcome);
    Expected<void> checkRegistrationLimit(const Peer& peer, const boost::json::object& hello);

    NodeContext& m_context;
    PeerRegistry& m_peers;
    TrustBook& m_trust;
    AdmissionSettings m_settings;
};

} // namespace goblin::labnode
