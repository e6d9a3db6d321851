#include "kinds/graph/replica_decider.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include <boost/asio/post.hpp>

namespace goblin::labnode {

namespace asio = boost::asio;

ReplicaDecider::ReplicaDecider(NodeContext& context, GraphBook& book, Scheduler& scheduler,
                               TrustBook& trust, NodeChecks& checks, TaskVerdicts& verdicts,
                               const DecisionHooks& hooks)
    : m_context(context), m_book(book), m_scheduler(scheduler), m_trust(trust), m_checks(checks),
      m_verdicts(verdicts), m_hooks(hooks) {}

void ReplicaDecider::judge(GraphTask& task) {
    const bool nodeReplica =
        std::any_of(task.replicas.begin(), task.replicas.end(),
                    [](const verify::Replica& replica) { return replica.fromNode(); });
    // Two opinions are needed, unless the node computed it (the node's answer is trusted).
    if (task.replicas.size() < 2 && !nodeReplica)
        return;
    task.judging = true;
    const GraphChunk& chunk = m_book.chunkOf(task);
    asio::post(m_context.workers, [this, taskId = task.id, tolerances = chunk.tolerances,
                                   replicas = task.replicas] {
        const auto start = std::chrono::steady_clock::now();
        verify::Judgement judgement = verify::judgeReplicas(tolerances, replicas);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        asio::post(m_context.core,
                   [this, taskId, count = replicas.size(), judgement = std::move(judgement),
                    seconds]() mutable { onJudged(taskId, count, std::move(judgement), seconds); });
    });
}

void ReplicaDecider::onJudged(std::int64_t taskId, std::size_t judgedCount,
                              verify::Judgement judgement, double seconds) {
    GraphTask* found = m_book.task(taskId);
    if (!found)
        return; // released meanwhile
    GraphTask& task = *found;
    task.judging = false;
    m_book.jobOf(task).verifySeconds += seconds;
    if (m_book.settled(task))
        return;
    if (task.replicas.size() != judgedCount)
        return m_hooks.rejudge(task); // another replica arrived meanwhile: judge them all
    switch (judgement.decision) {
    case verify::Decision::NeedNodeReference:
        m_context.log("graph task " + std::to_string(task.id) +
                      ": the volunteers disagree; the node decides");
        task.tiebreak = true;
        return computeOnNode(task);
    case verify::Decision::Decided:
        break;
    }
    if (m_verdicts.dropQuarantined(task))
        return m_hooks.rejudge(task); // a volunteer of it was caught meanwhile
    if (!task.replicas[judgement.decisive].fromNode() && !task.audited) {
        std::vector<std::string> volunteers;
        std::set<std::string> addresses;
        for (const verify::Replica& replica : task.replicas) {
            volunteers.push_back(replica.volunteerId);
            addresses.insert(replica.address);
        }
        const bool sharedAddress = addresses.size() < task.replicas.size();
        // Drawn now, after the results are in: nothing a volunteer saw could have told it.
        if (m_trust.chooseAudit(volunteers, sharedAddress))
            return audit(task, std::move(judgement));
    }
    m_verdicts.decide(task, std::move(judgement), Vouched::ByReplicas);
}

void ReplicaDecider::audit(GraphTask& task, verify::Judgement judgement) {
    task.audited = true;
    // Drawn like the audit itself: a volunteer cannot know which audits are bit for bit. A
    // non-canonical replica's cheap nodes differ from the reference in their last bits, so a cheap
    // audit of it would only fail into the full recomputation; one without the witnesses (the
    // replica that was to carry them was dropped) gives the cheap audit nothing to check.
    const verify::Replica& decisive = task.replicas[judgement.decisive];
    const bool witnessed = m_book.chunkOf(task).withWitnesses(decisive.outputs.size());
    if (m_context.random.chance(m_trust.settings().fullAuditShare) ||
        !verify::isCanonicalBackend(decisive.backend) || !witnessed)
        return computeOnNode(task);
    task.nodeComputing = true; // nothing else decides it meanwhile
    std::vector<core::Tensor> claimed = task.replicas[judgement.decisive].outputs;
    m_checks.cheapAudit(task, std::move(claimed), verify::GreyZone::RecomputeBitwise,
                        [this, judgement = std::move(judgement)](
                            std::int64_t taskId, verify::CheapAuditReport report) mutable {
                            onCheapAudited(taskId, std::move(judgement), std::move(report));
                        });
}

void ReplicaDecider::onCheapAudited(std::int64_t taskId, verify::Judgement judgement,
                                    verify::CheapAuditReport report) {
    GraphTask* found = m_checks.afterNodeCheck(taskId, report.seconds);
    if (!found)
        return;
    GraphTask& task = *found;
    if (task.replicas.size() != judgement.verdicts.size() || m_verdicts.dropQuarantined(task)) {
        task.audited = false; // what was audited changed: judge (and draw) again
        return m_hooks.rejudge(task);
    }
    if (!report.passed) {
        // Someone lied, or the check cannot vouch for it (a non-canonical replica's rounding):
        // the node recomputes the task and whoever differs from it is rejected.
        m_context.log.warn("graph task " + std::to_string(taskId) + ": the cheap audit failed (" +
                           report.reason + "); the node recomputes it");
        return computeOnNode(task);
    }
    char cost[64];
    std::snprintf(cost, sizeof cost, " in %.6f s", report.seconds);
    for (verify::ReplicaVerdict& verdict : judgement.verdicts)
        if (verdict.accepted)
            verdict.reason = report.reason + cost;
    m_verdicts.decide(task, std::move(judgement), Vouched::ByCheapAudit);
}

void ReplicaDecider::computeOnNode(GraphTask& task) {
    if (task.nodeComputing || m_book.settled(task))
        return;
    task.nodeComputing = true;
    m_checks.runReference(
        task,
        [this](std::int64_t taskId, Expected<std::vector<core::Tensor>> outputs, double seconds) {
            GraphTask* found = m_book.task(taskId);
            if (!found)
                return;
            GraphTask& current = *found;
            current.nodeComputing = false;
            GraphJob& job = m_book.jobOf(current);
            job.verifySeconds += seconds;
            if (!outputs) {
                // The reference refuses the computation itself (integer division by zero …):
                // no volunteer result can be right, and the job cannot finish.
                return m_hooks.failJob(job, outputs.error());
            }
            verify::Replica replica;
            replica.backend = "node-reference";
            replica.computeSeconds = seconds;
            replica.outputs = std::move(*outputs);
            current.replicas.push_back(std::move(replica));
            current.replicaPeers.push_back(0);
            // Outstanding opinions are no longer needed.
            m_scheduler.withdraw(TaskVerdicts::kOp, taskId);
            m_book.stopWanting(current, "the node computed it: no more opinions wanted");
            m_hooks.rejudge(current);
        });
}

} // namespace goblin::labnode
