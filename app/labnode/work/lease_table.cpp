#include "work/lease_table.hpp"

#include <limits>

namespace goblin::labnode {

void LeaseTable::add(const Lease& lease) {
    const auto [it, added] =
        m_leases.emplace(Key{std::string(lease.kind), lease.task, lease.attempt}, lease);
    if (added)
        ++m_heldBy[lease.peer];
}

Lease LeaseTable::erase(std::map<Key, Lease>::iterator it) {
    Lease lease = std::move(it->second);
    m_leases.erase(it);
    if (auto held = m_heldBy.find(lease.peer); held != m_heldBy.end() && --held->second <= 0)
        m_heldBy.erase(held);
    return lease;
}

std::optional<Lease> LeaseTable::take(std::string_view kind, std::int64_t task,
                                      std::int64_t attempt, std::uint64_t peer) {
    auto it = m_leases.find(Key{std::string(kind), task, attempt});
    if (it == m_leases.end() || it->second.peer != peer)
        return std::nullopt;
    return erase(it);
}

std::vector<Lease> LeaseTable::takeExpired(double now) {
    std::vector<Lease> expired;
    for (auto it = m_leases.begin(); it != m_leases.end();) {
        auto next = std::next(it);
        if (it->second.deadline <= now)
            expired.push_back(erase(it));
        it = next;
    }
    return expired;
}

std::vector<Lease> LeaseTable::takeHeldBy(std::uint64_t peer) {
    std::vector<Lease> held;
    for (auto it = m_leases.begin(); it != m_leases.end() && m_heldBy.contains(peer);) {
        auto next = std::next(it);
        if (it->second.peer == peer)
            held.push_back(erase(it));
        it = next;
    }
    return held;
}

std::vector<Lease> LeaseTable::takeOfTask(std::string_view kind, std::int64_t task) {
    std::vector<Lease> leases;
    auto it = m_leases.lower_bound(
        Key{std::string(kind), task, std::numeric_limits<std::int64_t>::min()});
    while (it != m_leases.end() && std::get<0>(it->first) == kind &&
           std::get<1>(it->first) == task) {
        auto next = std::next(it);
        leases.push_back(erase(it));
        it = next;
    }
    return leases;
}

std::vector<Lease> LeaseTable::ofTask(std::string_view kind, std::int64_t task) const {
    std::vector<Lease> leases;
    auto it = m_leases.lower_bound(
        Key{std::string(kind), task, std::numeric_limits<std::int64_t>::min()});
    for (; it != m_leases.end() && std::get<0>(it->first) == kind && std::get<1>(it->first) == task;
         ++it)
        leases.push_back(it->second);
    return leases;
}

bool LeaseTable::leasedOnBackend(std::string_view kind, std::int64_t task,
                                 std::string_view backend) const {
    auto it = m_leases.lower_bound(
        Key{std::string(kind), task, std::numeric_limits<std::int64_t>::min()});
    for (; it != m_leases.end() && std::get<0>(it->first) == kind && std::get<1>(it->first) == task;
         ++it)
        if (it->second.backend == backend)
            return true;
    return false;
}

int LeaseTable::countHeldBy(std::uint64_t peer) const {
    auto it = m_heldBy.find(peer);
    return it == m_heldBy.end() ? 0 : it->second;
}

std::vector<Lease> LeaseTable::heldBy(std::uint64_t peer) const {
    std::vector<Lease> held;
    if (countHeldBy(peer) == 0)
        return held;
    for (const auto& [key, lease] : m_leases)
        if (lease.peer == peer)
            held.push_back(lease);
    return held;
}

} // namespace goblin::labnode
