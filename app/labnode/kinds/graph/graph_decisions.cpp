#include "kinds/graph/graph_decisions.hpp"

#include <algorithm>
#include <cmath>

namespace goblin::labnode {

GraphDecisions::GraphDecisions(NodeContext& context, GraphBook& book, Scheduler& scheduler,
                               VerdictPath& verdicts, PeerRegistry& peers, TrustBook& trust,
                               DecisionHooks hooks)
    : m_book(book), m_hooks(std::move(hooks)), m_checks(context, book),
      m_verdicts(context, book, scheduler, verdicts, peers, trust, m_hooks),
      m_replicas(context, book, scheduler, trust, m_checks, m_verdicts, m_hooks),
      m_alone(context, m_checks, m_verdicts, m_hooks), m_recheck(context, book, trust, m_hooks) {
    m_hooks.rejudge = [this](GraphTask& task) { judge(task); };
}

void GraphDecisions::addReplica(GraphTask& task, verify::Replica replica, std::uint64_t peer) {
    task.replicas.push_back(std::move(replica));
    task.replicaPeers.push_back(peer);
    judge(task);
}

void GraphDecisions::rejectMalformed(GraphTask& task, const Lease& lease,
                                     const std::string& backend, double computeSeconds,
                                     const std::string& why) {
    verify::Replica replica;
    replica.attempt = lease.attempt;
    replica.volunteerId = lease.volunteerId;
    replica.backend = backend;
    replica.computeSeconds = computeSeconds;
    m_verdicts.reject(task, replica, lease.peer, "shape-gate", INFINITY, why);
    m_hooks.wantOpinion(task);
}

void GraphDecisions::computeOnNode(GraphTask& task) {
    m_replicas.computeOnNode(task);
}

void GraphDecisions::judge(GraphTask& task) {
    if (!task.judging && !m_book.settled(task))
        m_verdicts.dropQuarantined(task);
    if (task.judging || task.nodeComputing || m_book.settled(task))
        return;
    const bool nodeReplica =
        std::any_of(task.replicas.begin(), task.replicas.end(),
                    [](const verify::Replica& replica) { return replica.fromNode(); });
    if (opinionsWanted(m_book.jobOf(task)) == 1 && !nodeReplica)
        return m_alone.judge(task); // the node checks the one opinion itself
    m_replicas.judge(task);
}

void GraphDecisions::onQuarantined(const std::string& volunteerId) {
    for (std::int64_t taskId : m_book.taskIds()) {
        GraphTask* task = m_book.task(taskId);
        if (!task || !task->involved.contains(volunteerId) ||
            m_book.jobOf(*task).state != JobState::Running)
            continue;
        if (m_book.settled(*task))
            m_recheck.recheckIfNeeded(*task, volunteerId);
        else if (!task->judging && !task->nodeComputing)
            judge(*task); // in-flight comparisons and node computations drop it when they return
    }
}

} // namespace goblin::labnode
