// How a graph task is decided: the entry the graph kind calls with a task's replicas, which hands
// the task to its decider — ReplicaDecider (two volunteers, the referee, trust audits, a tie-break
// by the node) or CheckedAloneDecider (GraphVerification::Freivalds: one volunteer, checked by the
// node) — and, when a volunteer is quarantined, drops its replicas from undecided tasks and has
// QuarantineRecheck decide again the decided tasks of running jobs it took part in. Verdicts are
// written by TaskVerdicts, the node's own work done by NodeChecks. Owned by GraphJobs, which it
// calls back through DecisionHooks. Core thread.
#pragma once

#include <cstdint>
#include <string>

#include "kinds/graph/checked_alone_decider.hpp"
#include "kinds/graph/graph_book.hpp"
#include "kinds/graph/node_checks.hpp"
#include "kinds/graph/quarantine_recheck.hpp"
#include "kinds/graph/replica_decider.hpp"
#include "kinds/graph/task_verdicts.hpp"
#include "node/node_context.hpp"
#include "node/trust_book.hpp"
#include "work/job_kind.hpp"
#include "work/scheduler.hpp"
#include "work/verdict_path.hpp"

namespace goblin::labnode {

class GraphDecisions {
public:
    // `hooks.rejudge` is the decisions' own; the others are the graph kind's.
    GraphDecisions(NodeContext& context, GraphBook& book, Scheduler& scheduler,
                   VerdictPath& verdicts, PeerRegistry& peers, TrustBook& trust,
                   DecisionHooks hooks);

    // A replica that passed the shape gate.
    void addReplica(GraphTask& task, verify::Replica replica, std::uint64_t peer);
    // A replica that failed it: rejected at once (and another opinion is wanted).
    void rejectMalformed(GraphTask& task, const Lease& lease, const std::string& backend,
                         double computeSeconds, const std::string& why);
    // Volunteers gave up on the task: the node computes it.
    void computeOnNode(GraphTask& task);
    // The volunteer was caught: drop its replicas from undecided tasks and recheck decided ones
    // of running jobs it took part in.
    void onQuarantined(const std::string& volunteerId);

private:
    // Hands the task to its decider, unless it is being judged, computed by the node or settled.
    void judge(GraphTask& task);

    GraphBook& m_book;
    DecisionHooks m_hooks;
    NodeChecks m_checks;
    TaskVerdicts m_verdicts;
    ReplicaDecider m_replicas;
    CheckedAloneDecider m_alone;
    QuarantineRecheck m_recheck;
};

} // namespace goblin::labnode
