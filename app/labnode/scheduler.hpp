// One scheduler and one lease model for every job kind: it hands queued tasks to volunteers with
// free slots (round-robin, one task per volunteer per pass), records each lease (kind, task,
// attempt, volunteer, deadline) durably before the task frame leaves, checks every result against
// the lease it answers (a stale one frees nothing), and ends leases that expire, fail or whose
// volunteer left. Core thread only; heavy task frames are built on the worker pool.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <boost/json/object.hpp>

#include "job_kind.hpp"
#include "lease_table.hpp"
#include "node_context.hpp"
#include "peer_registry.hpp"
#include "verdict_path.hpp"

namespace goblin::labnode {

struct SchedulerSettings {
    double leaseSeconds = 120.0;
};

class Scheduler {
public:
    Scheduler(NodeContext& context, PeerRegistry& peers, VerdictPath& verdicts,
              SchedulerSettings settings);

    // Kinds are asked for tasks in the order they were added; the first is the default for
    // results that name no known op.
    void addKind(JobKind& kind);
    void start(); // the lease timer
    void stop();

    // Tasks were queued: lease them out soon (one pump per burst).
    void wake();
    void pump();
    void expireLeases();

    void onResult(std::uint64_t peer, net::Message message);
    void onTaskError(std::uint64_t peer, const boost::json::object& report);
    void onPeerClosed(const Peer& peer, const Error& reason);
    // The kind no longer wants the outstanding leases of a task (it is decided, or the node
    // computes it): they end, and results for them are stale.
    void withdraw(std::string_view kind, std::int64_t task);

    int leasesHeldBy(std::uint64_t peer) const { return m_leases.countHeldBy(peer); }
    bool leasedOnBackend(std::string_view kind, std::int64_t task, std::string_view backend) const {
        return m_leases.leasedOnBackend(kind, task, backend);
    }

private:
    JobKind& kindOf(std::string_view op);
    bool anyQueued() const;
    void sendTask(JobKind& kind, const Lease& lease);
    void scheduleLeaseTimer();

    NodeContext& m_context;
    PeerRegistry& m_peers;
    VerdictPath& m_verdicts;
    SchedulerSettings m_settings;
    std::vector<JobKind*> m_kinds;
    LeaseTable m_leases;
    boost::asio::steady_timer m_leaseTimer;
    bool m_pumpPosted = false;
    bool m_stopped = false;
};

} // namespace goblin::labnode
