// One scheduler and one lease model for every job kind: it hands queued tasks to volunteers with
// free slots (round-robin, one task per volunteer per pass), records each lease (kind, task,
// attempt, volunteer, deadline) durably before the task frame leaves, checks every result against
// the lease it answers (a stale one frees nothing), and ends leases that expire, fail or whose
// volunteer left. Leases cannot be gamed (docs/protocol.md, "Volunteer messages"): a volunteer
// never gets a task back whose lease it lost, its expiries cost it slots, and a task volunteers
// keep dropping is computed by the node. Core thread only; heavy task frames are built on workers.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <boost/json/object.hpp>

#include "node/node_context.hpp"
#include "node/peer_registry.hpp"
#include "work/job_kind.hpp"
#include "work/lease_history.hpp"
#include "work/lease_table.hpp"
#include "work/verdict_path.hpp"

namespace goblin::labnode {

struct SchedulerSettings {
    double leaseSeconds = 120.0;
    int maxTaskExpiries = 3; // a task whose lease expired this often is computed by the node
    // How often expired leases are looked for. Queued tasks are offered whenever something
    // changes (a result, a decision, a volunteer), not on this tick.
    double leaseCheckSeconds = 1.0;
    // A task its volunteers handed back this often (took it and hung up at once: a task that
    // crashes every volunteer, a result the node cannot read, a volunteer that takes it, leaves
    // and says hello again) is computed by the node rather than offered once more.
    int maxTaskHandBacks = 6;
};

// Sees every lease lost without an answer (Expired, TaskError, Disconnected), after the kind was
// told: trust counts them against the volunteer.
using LeaseObserver = std::function<void(const Lease&, LeaseLoss)>;

class Scheduler {
public:
    Scheduler(NodeContext& context, PeerRegistry& peers, VerdictPath& verdicts,
              SchedulerSettings settings);

    // Kinds are asked for tasks in the order they were added; the first is the default for
    // results that name no known op.
    void addKind(JobKind& kind);
    void setLeaseObserver(LeaseObserver observer) { m_observer = std::move(observer); }
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
    std::vector<Lease> leasesOf(std::uint64_t peer) const { return m_leases.heldBy(peer); }
    // Counts the passes that hand out tasks: tasks claimed in the current one are not leases
    // yet (they are recorded together at its end).
    std::uint64_t pumps() const { return m_pumps; }
    std::vector<Lease> leasesOfTask(std::string_view kind, std::int64_t task) const {
        return m_leases.ofTask(kind, task);
    }
    bool leasedOnBackend(std::string_view kind, std::int64_t task, std::string_view backend) const {
        return m_leases.leasedOnBackend(kind, task, backend);
    }
    // The slots `peer` may fill now (what it advertised, less what its expiries cost); 0 if gone.
    int slotsOf(std::uint64_t peer) const;
    const LeaseHistory& history() const { return m_history; }

private:
    using DueOnNode = std::set<std::pair<JobKind*, std::int64_t>>;
    struct Assignment {
        JobKind* kind;
        Lease lease;
    };

    JobKind& kindOf(std::string_view op);
    bool anyQueued() const;
    void sendTask(JobKind& kind, const Lease& lease);
    void scheduleLeaseTimer();
    void loadHistory();
    // Claims a task for every free slot, round-robin; tasks volunteers gave up on go to `due`.
    std::vector<Assignment> claimTasks(double deadline, DueOnNode& due);
    // Whether `task` may go to `volunteer`; a task volunteers gave up on is noted in `due`.
    bool mayLease(JobKind& kind, std::int64_t task, const Peer& volunteer, DueOnNode& due);
    // A lease ended without a result: remembered, the kind told, the observer too, and the task
    // goes to the node when volunteers gave up on it.
    void lose(JobKind& kind, const Lease& lease, LeaseLoss why, const std::string& detail);
    void remember(const Lease& lease, LeaseLoss why);
    bool volunteersGaveUp(std::string_view kind, std::int64_t task, std::uint64_t leaving) const;
    // Its lease expired, or was handed back, too often: the node's.
    bool triedTooOften(std::string_view kind, std::int64_t task) const;
    void computeOnNode(JobKind& kind, std::int64_t task);

    NodeContext& m_context;
    PeerRegistry& m_peers;
    VerdictPath& m_verdicts;
    SchedulerSettings m_settings;
    std::vector<JobKind*> m_kinds;
    LeaseTable m_leases;
    LeaseHistory m_history;
    LeaseObserver m_observer;
    boost::asio::steady_timer m_leaseTimer;
    bool m_pumpPosted = false;
    std::uint64_t m_pumps = 0;
    bool m_stopped = false;
};

} // namespace goblin::labnode
