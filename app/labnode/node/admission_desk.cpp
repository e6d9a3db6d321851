#include "node/admission_desk.hpp"

#include <boost/json/object.hpp>

#include "goblin/net/json_fields.hpp"
#include "goblin/net/messages/handshake.hpp"
#include "node/secrets.hpp"
#include "node/volunteer_admission.hpp"
#include "store/admission_store.hpp"

namespace goblin::labnode {

namespace json = boost::json;

namespace {

constexpr double kRegistrationWindowSeconds = 3600;

bool registers(const json::object& hello) {
    const auto* identity = hello.if_contains("identity");
    return !identity || identity->is_null();
}

} // namespace

AdmissionDesk::AdmissionDesk(NodeContext& context, PeerRegistry& peers, TrustBook& trust,
                             AdmissionSettings settings)
    : m_context(context), m_peers(peers), m_trust(trust), m_settings(settings) {}

Expected<void> AdmissionDesk::checkRegistrationLimit(const Peer& peer, const json::object& hello) {
    if (!registers(hello))
        return {};
    const std::string address = peer.link->address();
    const double since = m_context.clock() - kRegistrationWindowSeconds;
    if (registrationsSince(m_context.store.database(), address, since) <
        m_settings.registrationsPerHour)
        return {};
    m_context.log.warn("refused a new volunteer identity from " + address + ": " +
                       std::to_string(m_settings.registrationsPerHour) +
                       " registered in the last hour");
    return makeError(ErrorCode::LimitExceeded,
                     "too many new volunteer identities from this address (" +
                         std::to_string(m_settings.registrationsPerHour) +
                         " per hour); reconnect with the identity you were given");
}

bool AdmissionDesk::recheckApprovals() {
    bool approved = false;
    for (Peer* peer : m_peers.awaitingApproval()) {
        if (!isApproved(m_context.store.database(), peer->volunteer.volunteerId))
            continue;
        peer->volunteer.approved = true;
        approved = true;
        m_context.log("volunteer " + peer->volunteer.volunteerId + " approved: it gets work now");
    }
    return approved;
}

bool AdmissionDesk::onHello(Peer& peer, const net::Message& message) {
    const json::object& hello = message.control;
    if (message.type() != "hello") {
        m_peers.close(peer.id, Error{ErrorCode::InvalidMessage, "the first message must be hello"});
        return false;
    }
    auto versions = net::parseHelloVersions(hello);
    if (!versions) {
        m_peers.close(peer.id, versions.error());
        return false;
    }
    peer.catalog = static_cast<int>(versions->catalog);
    peer.protocol = static_cast<int>(versions->protocol);
    net::Welcome welcome;
    welcome.id = net::requestId(hello);
    welcome.protocol = versions->protocol; // answered in the version the peer spoke
    welcome.limits = m_settings.limits;
    auto admitted = peer.role == PeerRole::Researcher ? admitResearcher(peer, hello)
                                                      : admitVolunteer(peer, hello, welcome);
    if (!admitted) {
        // Failed authentications, bans and rate limits are what lab staff look for in the log.
        std::string line = peer.role == PeerRole::Researcher ? "researcher" : "volunteer";
        line.append(" hello from ").append(peer.link->address()).append(" refused: ");
        line.append(admitted.error().describe());
        m_context.log.warn(line);
        m_peers.close(peer.id, admitted.error());
        return false;
    }
    peer.ready = true;
    peer.link->allowTensors(); // before the welcome leaves: both go through its strand
    peer.link->send(net::toMessage(welcome));
    if (peer.role == PeerRole::Volunteer)
        m_context.log("volunteer " + peer.volunteer.volunteerId + " connected from " +
                      peer.link->address() + " (" + peer.volunteer.backend + ", " +
                      std::to_string(peer.volunteer.slots) + " slot(s))");
    return true;
}

Expected<void> AdmissionDesk::admitResearcher(Peer& peer, const json::object& hello) {
    auto token = net::requireString(hello, "token");
    if (!token || token->empty())
        return makeError(ErrorCode::Unauthenticated, "an access token is required");
    auto researcher = m_context.store.researcherByTokenHash(hashSecret(*token));
    if (!researcher)
        return makeError(ErrorCode::Unauthenticated, "invalid access token");
    peer.researcherId = *researcher;
    return {};
}

Expected<void> AdmissionDesk::admitVolunteer(Peer& peer, const json::object& hello,
                                             net::Welcome& welcome) {
    auto capabilities = parseCapabilities(hello);
    if (!capabilities)
        return tl::unexpected(capabilities.error());
    if (auto allowed = checkRegistrationLimit(peer, hello); !allowed)
        return allowed;
    auto admission =
        labnode::admitVolunteer(hello, m_context.store, m_context.random, m_context.clock());
    if (!admission)
        return tl::unexpected(admission.error());
    if (admission->newSecret)
        (void)recordRegistration(m_context.store.database(), peer.link->address(),
                                 m_context.clock());
    if (m_trust.isQuarantined(admission->volunteerId))
        return makeError(ErrorCode::Banned, "this volunteer is quarantined: " +
                                                m_trust.quarantineReason(admission->volunteerId));
    VolunteerInfo& info = peer.volunteer;
    info.volunteerId = admission->volunteerId;
    info.backend = capabilities->backend;
    info.address = peer.link->address();
    info.slots = capabilities->slots;
    info.memoryBytes = capabilities->memoryBytes;
    info.dtypes = std::move(capabilities->dtypes);
    info.graphs = capabilities->graphs && peer.catalog >= net::kCatalogVersion;
    info.inputCacheBytes = peer.protocol >= 4 ? capabilities->inputCacheBytes : 0;
    if (admission->newSecret) {
        welcome.secret = *admission->newSecret;
        m_context.log("volunteer " + info.volunteerId + " registered");
    }
    welcome.volunteerId = info.volunteerId;
    if (m_settings.policy == VolunteerPolicy::Approved &&
        !isApproved(m_context.store.database(), info.volunteerId)) {
        info.approved = false;
        m_context.log("volunteer " + info.volunteerId +
                      " waits for approval: goblin-labnode volunteer approve " + info.volunteerId);
    }
    (void)m_context.store.touchVolunteer(info.volunteerId, info.backend, m_context.clock());
    return {};
}

} // namespace goblin::labnode
