// The connected peers (volunteers and researchers) by peer id: what each said in its hello, send
// and close by id, and which researcher connections watch which job. Core thread only; the links
// it holds may be used from workers (PeerLink is thread-safe).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "goblin/net/message.hpp"
#include "node/peer_link.hpp"

namespace goblin::labnode {

enum class PeerRole { Volunteer, Researcher };

// What a volunteer advertised in its hello.
struct VolunteerInfo {
    std::string volunteerId;
    std::string backend;
    std::string address; // the network address it connected from (no port)
    int slots = 1;
    std::int64_t memoryBytes = 0; // what it lends (0: unknown, not limited)
    std::set<std::string> dtypes;
    bool graphs = false; // runs graph tasks (catalog ≥ 3 and op "graph")
    // Graph inputs it keeps by digest ("input_cache_bytes"); 0: all inputs travel.
    std::int64_t inputCacheBytes = 0;
    bool approved = true; // under `serve --volunteers approved`, only once lab staff approved it
    bool quarantined = false; // caught: it gets no more work while its connection closes
};

struct Peer {
    std::uint64_t id = 0;
    PeerRole role = PeerRole::Researcher;
    std::shared_ptr<PeerLink> link;
    bool ready = false; // the hello was accepted
    int catalog = 1;
    int protocol = 1;              // what its hello spoke (audit_report goes to researchers on 2+)
    std::int64_t researcherId = 0; // researchers
    VolunteerInfo volunteer;       // volunteers
};

class PeerRegistry {
public:
    Peer& add(std::uint64_t id, std::shared_ptr<PeerLink> link, PeerRole role);
    void remove(std::uint64_t id); // also stops its watches
    Peer* find(std::uint64_t id);
    const Peer* find(std::uint64_t id) const;

    void send(std::uint64_t id, net::Message message);
    void close(std::uint64_t id, const Error& reason);
    void closeAll(const Error& reason);
    // The connections of one volunteer identity (normally one).
    std::vector<std::uint64_t> connectionsOf(const std::string& volunteerId) const;
    // A researcher's ready connections that speak at least `protocol`.
    std::vector<std::uint64_t> researcherConnections(std::int64_t researcherId, int protocol) const;
    // Ready volunteers still waiting for lab staff's approval.
    std::vector<Peer*> awaitingApproval();

    // Volunteers whose hello was accepted and who may work (approved), in peer id order.
    std::vector<const Peer*> volunteers() const;
    // The number of ready volunteers and the smallest memory any of them lends (0: none said).
    int readyVolunteerCount(std::int64_t* smallestMemory) const;
    // Researcher connections whose hello was accepted.
    int readyResearcherCount() const;

    void watch(const std::string& jobId, std::uint64_t peer);
    void unwatch(const std::string& jobId, std::uint64_t peer);
    std::vector<std::uint64_t> watchers(const std::string& jobId) const;
    // The watchers, and the job forgets them (it finished or failed).
    std::vector<std::uint64_t> takeWatchers(const std::string& jobId);

private:
    std::map<std::uint64_t, Peer> m_peers;
    std::map<std::string, std::set<std::uint64_t>> m_watchers;
};

} // namespace goblin::labnode
