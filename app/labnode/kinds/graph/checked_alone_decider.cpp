#include "kinds/graph/checked_alone_decider.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace goblin::labnode {

CheckedAloneDecider::CheckedAloneDecider(NodeContext& context, NodeChecks& checks,
                                         TaskVerdicts& verdicts, const DecisionHooks& hooks)
    : m_context(context), m_checks(checks), m_verdicts(verdicts), m_hooks(hooks) {}

void CheckedAloneDecider::judge(GraphTask& task) {
    if (task.replicas.empty())
        return;
    task.nodeComputing = true; // nothing else decides it meanwhile
    const verify::Replica& replica = task.replicas.front();
    // Keyed from the node's CSPRNG now, after the result arrived.
    m_checks.cheapAudit(
        task, replica.outputs, verify::GreyZone::CheckExactly,
        [this, attempt = replica.attempt](std::int64_t taskId, verify::CheapAuditReport report) {
            onChecked(taskId, attempt, std::move(report));
        });
}

void CheckedAloneDecider::onChecked(std::int64_t taskId, std::int64_t attempt,
                                    verify::CheapAuditReport report) {
    GraphTask* found = m_checks.afterNodeCheck(taskId, report.seconds);
    if (!found)
        return;
    GraphTask& task = *found;
    const auto checked =
        std::find_if(task.replicas.begin(), task.replicas.end(),
                     [&](const verify::Replica& replica) { return replica.attempt == attempt; });
    if (checked == task.replicas.end() || m_verdicts.dropQuarantined(task))
        return m_hooks.rejudge(task); // what was checked is gone (its volunteer was caught)
    const auto index = static_cast<std::size_t>(checked - task.replicas.begin());
    if (!report.passed) {
        const verify::Replica rejected = *checked;
        const std::uint64_t peer = task.replicaPeers[index];
        task.replicas.erase(checked);
        task.replicaPeers.erase(task.replicaPeers.begin() + static_cast<std::ptrdiff_t>(index));
        m_verdicts.reject(task, rejected, peer, "node-audit", INFINITY,
                          "the node's check failed: " + report.reason);
        m_hooks.wantOpinion(task);
        return m_hooks.rejudge(task);
    }
    char cost[64];
    std::snprintf(cost, sizeof cost, " in %.6f s", report.seconds);
    verify::Judgement judgement;
    judgement.decision = verify::Decision::Decided;
    judgement.decisive = index;
    // One opinion is leased at a time; any other replica is not needed and not judged.
    judgement.verdicts.assign(task.replicas.size(), verify::ReplicaVerdict{});
    judgement.verdicts[index] =
        verify::ReplicaVerdict{true, report.maxErrorRatio, report.reason + cost};
    if (task.replicas.size() > 1) {
        m_context.log.warn("graph task " + std::to_string(taskId) + ": " +
                           std::to_string(task.replicas.size() - 1) +
                           " replica(s) beside the checked one were not needed");
        verify::Replica kept = task.replicas[index];
        const std::uint64_t peer = task.replicaPeers[index];
        task.replicas = {std::move(kept)};
        task.replicaPeers = {peer};
        judgement.decisive = 0;
        judgement.verdicts = {judgement.verdicts[index]};
    }
    m_verdicts.decide(task, std::move(judgement), Vouched::ByCheapAudit);
}

} // namespace goblin::labnode
