// The lab node's routing table: it builds the roles (peer registry, trust book, hello desk,
// researcher desk, scheduler, verdict path, and the job kinds — matmul, graph and training) and
// sends every connection event to the role it concerns. Lives on the core thread (one io_context
// run by one thread), which also owns the NodeStore; heavy work runs on the worker pool and posts
// back.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "kinds/graph/graph_jobs.hpp"
#include "kinds/matmul/matmul_jobs.hpp"
#include "kinds/train/training_jobs.hpp"
#include "node/admission_desk.hpp"
#include "node/ban_watch.hpp"
#include "node/node_context.hpp"
#include "node/peer_registry.hpp"
#include "node/researcher_desk.hpp"
#include "node/trust_book.hpp"
#include "work/scheduler.hpp"
#include "work/verdict_path.hpp"

namespace goblin::labnode {

struct CoordinatorSettings {
    net::Limits limits;
    double leaseSeconds = 120.0;
    int maxTaskExpiries = 3;        // then the node computes the task itself
    double leaseCheckSeconds = 1.0; // see SchedulerSettings
    int verificationVectors = 2;
    std::int64_t maxGraphTaskBytes = std::int64_t{4} << 30;
    std::int64_t planVolunteerBytes = 0;            // see GraphIntakeSettings
    double auditRetentionSeconds = 7 * 24 * 3600.0; // a released graph job's data, for audits
    double secondOpinionWaitSeconds = 60.0;         // see GraphJobSettings
    double retainSeconds = 72 * 3600.0; // a finished job nobody fetched and released is purged
    TrustSettings trust;
    int registrationsPerHour = 20; // new volunteer identities per network address
    VolunteerPolicy volunteers = VolunteerPolicy::Open;
};

class Coordinator {
public:
    Coordinator(NodeContext context, CoordinatorSettings settings);

    // Reloads unfinished jobs of every kind and starts the lease timer. Call once, on core.
    void start();
    void stop();

    // Entry points, each called on the core thread.
    void onConnected(std::uint64_t peer, std::shared_ptr<PeerLink> link, PeerRole role);
    void onMessage(std::uint64_t peer, net::Message message);
    void onClosed(std::uint64_t peer, const Error& reason);

    Scheduler& scheduler() { return m_scheduler; }
    const PeerRegistry& peers() const { return m_peers; }
    // Sees every committed verdict after trust did (the dashboard counts them per minute).
    void watchVerdicts(std::function<void(const VerdictRecord&)> watcher) {
        m_verdictWatcher = std::move(watcher);
    }

private:
    // Every two seconds: approvals (--volunteers approved) and bans lab staff recorded.
    void scheduleStaffCheck();

    NodeContext m_context;
    PeerRegistry m_peers;
    TrustBook m_trust;
    VerdictPath m_verdicts;
    Scheduler m_scheduler;
    AdmissionDesk m_admission;
    ResearcherDesk m_desk;
    MatmulJobs m_matmul;
    GraphJobs m_graphs;
    TrainingJobs m_training;
    BanWatch m_bans;
    boost::asio::steady_timer m_approvalTimer;
    bool m_approvalsPending = false;
    bool m_stopped = false;
    std::function<void(const VerdictRecord&)> m_verdictWatcher;
};

} // namespace goblin::labnode
