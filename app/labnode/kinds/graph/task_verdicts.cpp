#include "kinds/graph/task_verdicts.hpp"

#include <algorithm>
#include <cmath>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include "kinds/graph/graph_blobs.hpp"
#include "kinds/graph/graph_store.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;
namespace json = boost::json;

TaskVerdicts::TaskVerdicts(NodeContext& context, GraphBook& book, Scheduler& scheduler,
                           VerdictPath& verdicts, PeerRegistry& peers, TrustBook& trust,
                           const DecisionHooks& hooks)
    : m_context(context), m_book(book), m_scheduler(scheduler), m_verdicts(verdicts),
      m_peers(peers), m_trust(trust), m_hooks(hooks) {}

void TaskVerdicts::reject(const GraphTask& task, const verify::Replica& replica, std::uint64_t peer,
                          const std::string& method, double ratio, const std::string& why) {
    VerdictRecord record{std::string(kOp),
                         task.id,
                         replica.attempt,
                         replica.volunteerId,
                         replica.backend,
                         false,
                         method,
                         ratio,
                         0,
                         0,
                         why,
                         0,
                         replica.computeSeconds};
    m_context.log.warn("graph task " + std::to_string(task.id) + " from " + replica.volunteerId +
                       " REJECTED: " + why);
    VerdictBatch batch;
    batch.verdicts.push_back({peer, std::move(record)});
    batch.failed = [this, peer, taskId = task.id, attempt = replica.attempt](const VerdictBatch&,
                                                                             const Error& error) {
        m_context.log.error("graph task " + std::to_string(taskId) +
                            ": could not record a verdict (" + error.message + ")");
        m_peers.send(peer, verdictMessage(taskId, attempt, VerdictWord::Rejected));
    };
    m_verdicts.commitNow(std::move(batch));
}

void TaskVerdicts::decide(GraphTask& task, verify::Judgement judgement, Vouched vouched) {
    m_book.startDeciding(task, "its decision is stored and recorded");
    m_scheduler.withdraw(kOp, task.id);
    const std::string method = methodOf(task, judgement, vouched);
    // Hashing and writing the outputs is O(size): a worker does it; they reach the disk before the
    // verdicts commit, so a restarted node finds them.
    std::vector<core::Tensor> outputs = task.replicas[judgement.decisive].outputs;
    outputs.resize(std::min(outputs.size(), keptOutputCount(task)));
    asio::post(m_context.workers, [this, taskId = task.id, judgement = std::move(judgement), method,
                                   outputs = std::move(outputs)]() mutable {
        auto stored = storeTensors(m_context.blobs, outputs);
        asio::post(m_context.core, [this, taskId, judgement = std::move(judgement), method,
                                    stored = std::move(stored),
                                    outputs = std::move(outputs)]() mutable {
            GraphTask* found = m_book.task(taskId);
            if (!found)
                return; // released meanwhile
            GraphJob& job = m_book.jobOf(*found);
            if (job.state != JobState::Running)
                return;
            if (!stored)
                return m_hooks.failJob(
                    job, Error{ErrorCode::Internal, "storing outputs: " + stored.error().message});
            if (restsOnQuarantined(*found)) { // caught while its outputs were stored
                // Called off first: the opinions it wants again are then queued, or computed by
                // the node when no volunteer may give them (never a task left leased to nobody).
                m_book.callOff(*found, "a volunteer of a replica it rests on was quarantined");
                dropQuarantined(*found);
                return m_hooks.rejudge(*found);
            }
            commitDecision(taskId, judgement, method, json::serialize(*stored), std::move(outputs));
        });
    });
}

void TaskVerdicts::commitDecision(std::int64_t taskId, const verify::Judgement& judgement,
                                  const std::string& method, std::string storedOutputs,
                                  std::vector<core::Tensor> keptOutputs) {
    GraphTask& task = *m_book.task(taskId);
    VerdictBatch batch;
    for (std::size_t i = 0; i < task.replicas.size(); ++i) {
        const verify::Replica& replica = task.replicas[i];
        if (replica.fromNode())
            continue;
        const verify::ReplicaVerdict& verdict = judgement.verdicts[i];
        batch.verdicts.push_back(
            {task.replicaPeers[i],
             VerdictRecord{std::string(kOp), task.id, replica.attempt, replica.volunteerId,
                           replica.backend, verdict.accepted, method, verdict.ratio, 0, 0,
                           verdict.reason, 0, replica.computeSeconds}});
    }
    batch.alsoWrite = [taskId, outputs = std::move(storedOutputs)](Database& db) {
        return setGraphTaskAccepted(db, taskId, outputs);
    };
    batch.committed = [this, taskId, method, decisive = judgement.decisive,
                       kept = std::move(keptOutputs)](const VerdictBatch& done) mutable {
        const std::vector<VerdictBatch::Entry>& verdicts = done.verdicts;
        GraphTask& decided = *m_book.task(taskId);
        m_book.markDecided(decided);
        // What was not stored (the witnesses) is needed no more in memory either: a later
        // recheck compares the researcher's outputs.
        decided.outputs = std::move(kept);
        for (verify::Replica& replica : decided.replicas)
            if (replica.outputs.size() > decided.outputs.size())
                replica.outputs.resize(decided.outputs.size());
        decided.replicas[decisive].outputs = decided.outputs;
        decided.nodeOutputs = decided.replicas[decisive].fromNode();
        for (const VerdictBatch::Entry& entry : verdicts)
            if (!entry.record.accepted)
                m_context.log.warn("graph task " + std::to_string(taskId) + " attempt " +
                                   std::to_string(entry.record.attempt) + " from volunteer " +
                                   entry.record.volunteerId + " REJECTED (" + method +
                                   "): " + entry.record.reason);
        m_hooks.decided(decided);
    };
    batch.failed = [this, taskId](const VerdictBatch&, const Error& error) {
        m_context.log.error("graph task " + std::to_string(taskId) +
                            ": could not record its verdicts (" + error.message + ")");
        m_hooks.failJob(m_book.jobOf(*m_book.task(taskId)),
                        Error{ErrorCode::Internal, error.message});
    };
    m_verdicts.commitNow(std::move(batch));
}

// Only the researcher's outputs are stored, never the witnesses (the matmul and convolution values
// a task returns for the node's checks): every check that reads them runs before the decision,
// from the replicas in memory, and a later recheck (a running job's after a quarantine, a
// delivered job's) compares the node's recomputation with what the researcher got. A lie that
// moved a witness and what follows from it moved a researcher's output too; one that moved
// nothing the researcher gets was used nowhere. Witnesses are most of a training task's bytes
// (docs/verification.md).
std::size_t TaskVerdicts::keptOutputCount(const GraphTask& task) const {
    return m_book.chunkOf(task).researcherOutputs();
}

std::string TaskVerdicts::methodOf(const GraphTask& task, const verify::Judgement& judgement,
                                   Vouched vouched) const {
    if (!task.replicas[judgement.decisive].fromNode())
        return vouched == Vouched::ByCheapAudit ? "node-audit" : "replica-agreement";
    if (task.audited)
        return "node-audit";
    return task.tiebreak ? "node-tiebreak" : "node-compute";
}

bool TaskVerdicts::restsOnQuarantined(const GraphTask& task) {
    return std::any_of(task.replicas.begin(), task.replicas.end(),
                       [this](const verify::Replica& replica) {
                           return !replica.fromNode() && m_trust.isQuarantined(replica.volunteerId);
                       });
}

bool TaskVerdicts::dropQuarantined(GraphTask& task) {
    VerdictBatch batch;
    int dropped = 0;
    for (std::size_t i = task.replicas.size(); i-- > 0;) {
        const verify::Replica& replica = task.replicas[i];
        if (replica.fromNode() || !m_trust.isQuarantined(replica.volunteerId))
            continue;
        batch.verdicts.push_back(
            {task.replicaPeers[i],
             VerdictRecord{std::string(kOp), task.id, replica.attempt, replica.volunteerId,
                           replica.backend, false, "quarantine", INFINITY, 0, 0,
                           m_trust.quarantineReason(replica.volunteerId), 0,
                           replica.computeSeconds}});
        task.replicas.erase(task.replicas.begin() + static_cast<std::ptrdiff_t>(i));
        task.replicaPeers.erase(task.replicaPeers.begin() + static_cast<std::ptrdiff_t>(i));
        ++dropped;
    }
    if (dropped == 0)
        return false;
    batch.failed = [this, taskId = task.id](const VerdictBatch&, const Error& error) {
        m_context.log.error("graph task " + std::to_string(taskId) +
                            ": could not record a quarantined replica's verdict (" + error.message +
                            ")");
    };
    m_verdicts.commitNow(std::move(batch));
    m_context.log.warn("graph task " + std::to_string(task.id) + ": " + std::to_string(dropped) +
                       " replica(s) of quarantined volunteers dropped; asking again");
    for (int i = 0; i < dropped; ++i)
        m_hooks.wantOpinion(task);
    return true;
}

} // namespace goblin::labnode
