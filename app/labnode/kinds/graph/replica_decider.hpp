// The decider of graph tasks computed by replicas: two volunteer replicas that passed the shape
// gate are compared on a worker (replica_referee); any disagreement has the node compute the task
// itself (a tie-break), and agreement is audited by the node at the rate the volunteers' trust
// asks for (trust_book.hpp), drawn from the CSPRNG after the results are in: a cheap audit, or for
// a drawn share the full recomputation. A replica the node computed decides alone (whoever differs
// from it loses). Core thread; comparisons and node work on the worker pool.
#pragma once

#include <cstdint>

#include "kinds/graph/graph_book.hpp"
#include "kinds/graph/node_checks.hpp"
#include "kinds/graph/task_verdicts.hpp"
#include "node/node_context.hpp"
#include "node/trust_book.hpp"
#include "work/scheduler.hpp"

namespace goblin::labnode {

class ReplicaDecider {
public:
    ReplicaDecider(NodeContext& context, GraphBook& book, Scheduler& scheduler, TrustBook& trust,
                   NodeChecks& checks, TaskVerdicts& verdicts, const DecisionHooks& hooks);

    // Compares the task's replicas once two are in (or the node's is): a task not being judged,
    // computed by the node or settled.
    void judge(GraphTask& task);
    // The node's reference computes the task and its replica joins the others. Idempotent.
    void computeOnNode(GraphTask& task);

private:
    void onJudged(std::int64_t taskId, std::size_t judgedCount, verify::Judgement judgement,
                  double seconds);
    void audit(GraphTask& task, verify::Judgement judgement);
    void onCheapAudited(std::int64_t taskId, verify::Judgement judgement,
                        verify::CheapAuditReport report);

    NodeContext& m_context;
    GraphBook& m_book;
    Scheduler& m_scheduler;
    TrustBook& m_trust;
    NodeChecks& m_checks;
    TaskVerdicts& m_verdicts;
    const DecisionHooks& m_hooks;
};

} // namespace goblin::labnode
