// GraphDecisions for jobs verified by Freivalds (GraphVerification::Freivalds): one volunteer
// computes a task, its heavy matmuls through any BLAS, and the node checks every such task
// itself with a cheap audit (cheap_audit.hpp) whose grey-zone matrices are checked exactly, per
// element, instead of recomputed bit for bit. An honest replica always passes (every bound is
// sound); a failed check rejects the replica (its volunteer is quarantined) and asks another
// volunteer. docs/verification.md, "Graph tasks checked by Freivalds".
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <boost/asio/post.hpp>

#include "kinds/graph/graph_decisions.hpp"
#include "kinds/graph/keyed_random.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;

void GraphDecisions::checkAlone(GraphTask& task) {
    task.nodeComputing = true; // nothing else decides it meanwhile
    const GraphChunk& chunk = m_book.jobOf(task).chunks[task.chunk];
    const verify::Replica& replica = task.replicas.front();
    // The worker gets its own stream, keyed from the node's CSPRNG here on the core thread, after
    // the result arrived.
    asio::post(m_context.workers, [this, taskId = task.id, attempt = replica.attempt,
                                   graph = chunk.graph, plan = chunk.plan,
                                   inputs = valuesOf(chunk.inputs), claimed = replica.outputs,
                                   key = KeyedRandom::drawKey(m_context.random),
                                   probes = probesOf(task.jobId)]() mutable {
        KeyedRandom random(key);
        verify::CheapAuditReport report = verify::runCheapAudit(
            graph, plan, inputs, claimed, {}, random, probes.get(), verify::GreyZone::CheckExactly);
        asio::post(m_context.core, [this, taskId, attempt, report = std::move(report)]() mutable {
            onCheckedAlone(taskId, attempt, std::move(report));
        });
    });
}

void GraphDecisions::onCheckedAlone(std::int64_t taskId, std::int64_t attempt,
                                    verify::CheapAuditReport report) {
    GraphTask* found = afterNodeCheck(taskId, report.seconds);
    if (!found)
        return;
    GraphTask& task = *found;
    const auto checked =
        std::find_if(task.replicas.begin(), task.replicas.end(),
                     [&](const verify::Replica& replica) { return replica.attempt == attempt; });
    if (checked == task.replicas.end() || dropQuarantined(task))
        return judge(task); // what was checked is gone (its volunteer was caught meanwhile)
    const auto index = static_cast<std::size_t>(checked - task.replicas.begin());
    if (!report.passed) {
        const verify::Replica rejected = *checked;
        const std::uint64_t peer = task.replicaPeers[index];
        task.replicas.erase(checked);
        task.replicaPeers.erase(task.replicaPeers.begin() + static_cast<std::ptrdiff_t>(index));
        commitRejection(task, rejected, peer, "node-audit", INFINITY,
                        "the node's check failed: " + report.reason);
        m_hooks.wantOpinion(task);
        return judge(task);
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
    m_cheaplyAudited.insert(taskId);
    decide(task, std::move(judgement));
}

} // namespace goblin::labnode
