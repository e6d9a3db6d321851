#include "coordinator.hpp"

namespace goblin::labnode {

Coordinator::Coordinator(NodeContext context, CoordinatorSettings settings)
    : m_context(std::move(context)), m_verdicts(m_context, m_peers),
      m_scheduler(m_context, m_peers, m_verdicts,
                  SchedulerSettings{settings.leaseSeconds, settings.maxTaskExpiries}),
      m_admission(m_context, m_peers, settings.limits), m_desk(m_context, m_peers),
      m_matmul(m_context, m_peers, m_desk, m_scheduler, m_verdicts,
               MatmulSettings{settings.limits, settings.verificationVectors}),
      m_graphs(m_context, m_peers, m_desk, m_scheduler, m_verdicts,
               GraphJobSettings{GraphIntakeSettings{{}, settings.maxGraphTaskBytes},
                                settings.graphSampleRate, settings.graphSampleSeed}) {
    for (JobKind* kind : {static_cast<JobKind*>(&m_matmul), static_cast<JobKind*>(&m_graphs)}) {
        m_scheduler.addKind(*kind);
        m_desk.addKind(*kind);
    }
}

void Coordinator::start() {
    m_graphs.recover();
    m_matmul.recover();
    m_scheduler.start();
}

void Coordinator::stop() {
    m_stopped = true;
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
