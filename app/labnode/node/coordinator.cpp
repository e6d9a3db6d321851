#include "node/coordinator.hpp"

namespace goblin::labnode {

Coordinator::Coordinator(NodeContext context, CoordinatorSettings settings)
    : m_context(std::move(context)), m_trust(m_context, settings.trust),
      m_verdicts(m_context, m_peers),
      m_scheduler(m_context, m_peers, m_verdicts,
                  SchedulerSettings{settings.leaseSeconds, settings.maxTaskExpiries,
                                    settings.leaseCheckSeconds}),
      m_admission(
          m_context, m_peers, m_trust,
          AdmissionSettings{settings.limits, settings.registrationsPerHour, settings.volunteers}),
      m_desk(m_context, m_peers),
      m_matmul(m_context, m_peers, m_desk, m_scheduler, m_verdicts,
               MatmulSettings{settings.limits, settings.verificationVectors}),
      m_graphs(m_context, m_peers, m_desk, m_scheduler, m_verdicts, m_trust,
               GraphJobSettings{
                   GraphIntakeSettings{{}, settings.maxGraphTaskBytes, settings.planVolunteerBytes},
                   settings.auditRetentionSeconds, settings.secondOpinionWaitSeconds}),
      m_training(m_context, m_peers, m_desk, m_graphs, core::graph::GraphLimits{}),
      m_bans(m_context, m_trust), m_approvalTimer(m_context.core),
      m_approvalsPending(settings.volunteers == VolunteerPolicy::Approved) {
    m_verdicts.setObserver([this](const VerdictRecord& verdict) {
        m_trust.onVerdict(verdict);
        if (m_verdictWatcher)
            m_verdictWatcher(verdict);
    });
    // An expiry costs trust; a disconnect or a task error does not (they are not silence).
    m_scheduler.setLeaseObserver([this](const Lease& lease, LeaseLoss why) {
        if (why == LeaseLoss::Expired)
            m_trust.onExpired(lease.volunteerId);
    });
    // A caught volunteer leaves at once; its leases go back to the queue.
    m_trust.setOnCaught([this](const std::string& volunteerId) {
        for (std::uint64_t id : m_peers.connectionsOf(volunteerId))
            if (Peer* peer = m_peers.find(id))
                peer->volunteer.quarantined = true; // PeerRegistry::volunteers() skips it now
    });
    m_trust.addQuarantineListener([this](const std::string& volunteerId, const std::string& why) {
        for (std::uint64_t id : m_peers.connectionsOf(volunteerId))
            m_peers.close(id, Error{ErrorCode::Banned, "this volunteer is quarantined: " + why});
    });
    for (JobKind* kind : {static_cast<JobKind*>(&m_matmul), static_cast<JobKind*>(&m_graphs)}) {
        m_scheduler.addKind(*kind);
        m_desk.addKind(*kind);
    }
    m_desk.addKind(m_training); // its rounds' tasks are graph tasks: nothing to schedule
    m_desk.control().setRetention(settings.retainSeconds);
}

void Coordinator::start() {
    m_graphs.recover();
    m_training.recover(); // after the graph jobs it re-attaches to
    m_matmul.recover();
    m_scheduler.start();
    m_bans.check();
    scheduleStaffCheck();
}

void Coordinator::scheduleStaffCheck() {
    // Staff approve and ban with a separate command on the same database: look every two seconds.
    m_approvalTimer.expires_after(std::chrono::seconds(2));
    m_approvalTimer.async_wait([this](boost::system::error_code ec) {
        if (ec || m_stopped)
            return;
        if (m_approvalsPending && m_admission.recheckApprovals())
            m_scheduler.wake();
        m_bans.check();
        m_desk.checkStaffRequests(); // jobs cancel|purge
        scheduleStaffCheck();
    });
}

void Coordinator::stop() {
    m_stopped = true;
    m_approvalTimer.cancel();
    m_graphs.stop();
    m_scheduler.stop();
    m_peers.closeAll(Error{ErrorCode::Internal, "the lab node is shutting down"});
}

void Coordinator::onConnected(std::uint64_t peer, std::shared_ptr<PeerLink> link, PeerRole role) {
    m_peers.add(peer, std::move(link), role);
}

void Coordinator::onClosed(std::uint64_t id, const Error& reason) {
    const Peer* gone = m_peers.find(id);
    if (!gone)
        return;
    m_scheduler.onPeerClosed(*gone, reason);
    m_matmul.uploads().onPeerClosed(id);
    m_peers.remove(id);
}

void Coordinator::onMessage(std::uint64_t id, net::Message message) {
    Peer* sender = m_peers.find(id);
    if (!sender || m_stopped)
        return;
    if (!sender->ready) {
        if (m_admission.onHello(*sender, message) && sender->role == PeerRole::Volunteer)
            m_scheduler.pump();
        return;
    }
    if (sender->role == PeerRole::Researcher)
        return m_desk.onMessage(*sender, std::move(message));
    const std::string_view type = message.type();
    if (type == "result")
        return m_scheduler.onResult(id, std::move(message));
    if (type == "task_error")
        return m_scheduler.onTaskError(id, message.control);
    m_peers.close(id, Error{ErrorCode::InvalidMessage,
                            "unexpected message type '" + std::string(type) + "'"});
}

} // namespace goblin::labnode
