#include "node/peer_registry.hpp"

namespace goblin::labnode {

Peer& PeerRegistry::add(std::uint64_t id, std::shared_ptr<PeerLink> link, PeerRole role) {
    Peer peer;
    peer.id = id;
    peer.role = role;
    peer.link = std::move(link);
    return m_peers.insert_or_assign(id, std::move(peer)).first->second;
}

void PeerRegistry::remove(std::uint64_t id) {
    m_peers.erase(id);
    for (auto it = m_watchers.begin(); it != m_watchers.end();) {
        it->second.erase(id);
        it = it->second.empty() ? m_watchers.erase(it) : std::next(it);
    }
}

Peer* PeerRegistry::find(std::uint64_t id) {
    auto it = m_peers.find(id);
    return it == m_peers.end() ? nullptr : &it->second;
}

const Peer* PeerRegistry::find(std::uint64_t id) const {
    auto it = m_peers.find(id);
    return it == m_peers.end() ? nullptr : &it->second;
}

void PeerRegistry::send(std::uint64_t id, net::Message message) {
    if (Peer* peer = find(id))
        peer->link->send(std::move(message));
}

void PeerRegistry::close(std::uint64_t id, const Error& reason) {
    if (Peer* peer = find(id))
        peer->link->close(reason);
}

void PeerRegistry::closeAll(const Error& reason) {
    for (auto& [id, peer] : m_peers)
        peer.link->close(reason);
}

std::vector<std::uint64_t> PeerRegistry::connectionsOf(const std::string& volunteerId) const {
    std::vector<std::uint64_t> ids;
    for (const auto& [id, peer] : m_peers)
        if (peer.role == PeerRole::Volunteer && peer.volunteer.volunteerId == volunteerId)
            ids.push_back(id);
    return ids;
}

std::vector<std::uint64_t> PeerRegistry::researcherConnections(std::int64_t researcherId,
                                                               int protocol) const {
    std::vector<std::uint64_t> connections;
    for (const auto& [id, peer] : m_peers)
        if (peer.role == PeerRole::Researcher && peer.ready && peer.researcherId == researcherId &&
            peer.protocol >= protocol)
            connections.push_back(id);
    return connections;
}

std::vector<Peer*> PeerRegistry::awaitingApproval() {
    std::vector<Peer*> waiting;
    for (auto& [id, peer] : m_peers)
        if (peer.role == PeerRole::Volunteer && peer.ready && !peer.volunteer.approved)
            waiting.push_back(&peer);
    return waiting;
}

std::vector<const Peer*> PeerRegistry::volunteers() const {
    std::vector<const Peer*> ready;
    for (const auto& [id, peer] : m_peers)
        if (peer.role == PeerRole::Volunteer && peer.ready && peer.volunteer.approved &&
            !peer.volunteer.quarantined)
            ready.push_back(&peer);
    return ready;
}

int PeerRegistry::readyVolunteerCount(std::int64_t* smallestMemory) const {
    int count = 0;
    std::int64_t smallest = 0;
    for (const Peer* peer : volunteers()) {
        ++count;
        const std::int64_t memory = peer->volunteer.memoryBytes;
        if (memory > 0 && (smallest == 0 || memory < smallest))
            smallest = memory;
    }
    if (smallestMemory)
        *smallestMemory = smallest;
    return count;
}

int PeerRegistry::readyResearcherCount() const {
    int count = 0;
    for (const auto& [id, peer] : m_peers)
        if (peer.role == PeerRole::Researcher && peer.ready)
            ++count;
    return count;
}

void PeerRegistry::watch(const std::string& jobId, std::uint64_t peer) {
    if (find(peer))
        m_watchers[jobId].insert(peer);
}

void PeerRegistry::unwatch(const std::string& jobId, std::uint64_t peer) {
    auto it = m_watchers.find(jobId);
    if (it == m_watchers.end())
        return;
    it->second.erase(peer);
    if (it->second.empty())
        m_watchers.erase(it);
}

std::vector<std::uint64_t> PeerRegistry::watchers(const std::string& jobId) const {
    auto it = m_watchers.find(jobId);
    if (it == m_watchers.end())
        return {};
    return {it->second.begin(), it->second.end()};
}

std::vector<std::uint64_t> PeerRegistry::takeWatchers(const std::string& jobId) {
    auto peers = watchers(jobId);
    m_watchers.erase(jobId);
    return peers;
}

} // namespace goblin::labnode
