// The leases in force, in memory: by (kind, task, attempt), counted per volunteer connection.
// The Scheduler owns it and mirrors each new lease into the store (lease_store.hpp). No I/O.
// Core thread only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "work/job_kind.hpp"

namespace goblin::labnode {

class LeaseTable {
public:
    void add(const Lease& lease);
    // Ends the lease (kind, task, attempt) when `peer` holds it; nullopt when it is not current.
    std::optional<Lease> take(std::string_view kind, std::int64_t task, std::int64_t attempt,
                              std::uint64_t peer);
    std::vector<Lease> takeExpired(double now);
    std::vector<Lease> takeHeldBy(std::uint64_t peer);
    std::vector<Lease> takeOfTask(std::string_view kind, std::int64_t task);

    std::vector<Lease> ofTask(std::string_view kind, std::int64_t task) const;
    // Whether a lease of the task is held on `backend` (no copies: asked per queued task).
    bool leasedOnBackend(std::string_view kind, std::int64_t task, std::string_view backend) const;
    int countHeldBy(std::uint64_t peer) const;
    // The leases `peer` holds, by (kind, task, attempt).
    std::vector<Lease> heldBy(std::uint64_t peer) const;
    std::size_t size() const { return m_leases.size(); }

private:
    using Key = std::tuple<std::string, std::int64_t, std::int64_t>; // kind, task, attempt
    Lease erase(std::map<Key, Lease>::iterator it);

    std::map<Key, Lease> m_leases;
    std::unordered_map<std::uint64_t, int> m_heldBy;
};

} // namespace goblin::labnode
