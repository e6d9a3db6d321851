#include "kinds/graph/graph_decisions.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include "goblin/reference/graph_executor.hpp"
#include "kinds/graph/graph_blobs.hpp"
#include "kinds/graph/graph_store.hpp"
#include "kinds/graph/keyed_random.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

GraphDecisions::GraphDecisions(NodeContext& context, GraphBook& book, Scheduler& scheduler,
                               VerdictPath& verdicts, PeerRegistry& peers, TrustBook& trust,
                               Hooks hooks)
    : m_context(context), m_book(book), m_scheduler(scheduler), m_verdicts(verdicts),
      m_peers(peers), m_trust(trust), m_hooks(std::move(hooks)) {}

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
    commitRejection(task, replica, lease.peer, "shape-gate", INFINITY, why);
    m_hooks.wantOpinion(task);
}

void GraphDecisions::commitRejection(const GraphTask& task, const verify::Replica& replica,
                                     std::uint64_t peer, const std::string& method, double ratio,
                                     const std::string& why) {
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

void GraphDecisions::judge(GraphTask& task) {
    if (!task.judging && !task.settled())
        dropQuarantined(task);
    const bool nodeReplica =
        std::any_of(task.replicas.begin(), task.replicas.end(),
                    [](const verify::Replica& replica) { return replica.fromNode(); });
    if (task.judging || task.nodeComputing || task.settled())
        return;
    if (opinionsWanted(m_book.jobOf(task)) == 1 && !nodeReplica) {
        if (!task.replicas.empty())
            checkAlone(task); // the node checks the one opinion itself
        return;
    }
    // Two opinions are needed, unless the node computed it (the node's answer is trusted).
    if (task.replicas.size() < 2 && !nodeReplica)
        return;
    task.judging = true;
    const GraphChunk& chunk = m_book.jobOf(task).chunks[task.chunk];
    asio::post(m_context.workers, [this, taskId = task.id, tolerances = chunk.tolerances,
                                   replicas = task.replicas] {
        const auto start = std::chrono::steady_clock::now();
        verify::Judgement judgement = verify::judgeReplicas(tolerances, replicas);
        const double seconds = secondsSince(start);
        asio::post(m_context.core,
                   [this, taskId, count = replicas.size(), judgement = std::move(judgement),
                    seconds]() mutable { onJudged(taskId, count, std::move(judgement), seconds); });
    });
}

void GraphDecisions::onJudged(std::int64_t taskId, std::size_t judgedCount,
                              verify::Judgement judgement, double seconds) {
    GraphTask* found = m_book.task(taskId);
    if (!found)
        return; // released meanwhile
    GraphTask& task = *found;
    task.judging = false;
    m_book.jobOf(task).verifySeconds += seconds;
    if (task.settled())
        return;
    if (task.replicas.size() != judgedCount)
        return judge(task); // another replica arrived meanwhile: judge them all
    switch (judgement.decision) {
    case verify::Decision::NeedNodeReference:
        m_context.log("graph task " + std::to_string(task.id) +
                      ": the volunteers disagree; the node decides");
        task.tiebreak = true;
        return computeOnNode(task);
    case verify::Decision::Decided:
        break;
    }
    if (dropQuarantined(task))
        return judge(task); // a volunteer of it was caught meanwhile
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
    decide(task, std::move(judgement));
}

void GraphDecisions::audit(GraphTask& task, verify::Judgement judgement) {
    task.audited = true;
    // Drawn like the audit itself: a volunteer cannot know which audits are bit for bit. A
    // non-canonical replica's cheap nodes differ from the reference in their last bits, so a cheap
    // audit of it would only fail into the full recomputation.
    if (m_context.random.chance(m_trust.settings().fullAuditShare) ||
        !verify::isCanonicalBackend(task.replicas[judgement.decisive].backend))
        return computeOnNode(task);
    task.nodeComputing = true; // nothing else decides it meanwhile
    const GraphChunk& chunk = m_book.jobOf(task).chunks[task.chunk];
    // The worker gets its own stream, keyed from the node's CSPRNG here on the core thread.
    asio::post(m_context.workers, [this, taskId = task.id, graph = chunk.graph, plan = chunk.plan,
                                   inputs = valuesOf(chunk.inputs),
                                   claimed = task.replicas[judgement.decisive].outputs,
                                   key = KeyedRandom::drawKey(m_context.random),
                                   probes = probesOf(task.jobId),
                                   judgement = std::move(judgement)]() mutable {
        KeyedRandom random(key);
        verify::CheapAuditReport report =
            verify::runCheapAudit(graph, plan, inputs, claimed, {}, random, probes.get());
        asio::post(m_context.core, [this, taskId, judgement = std::move(judgement),
                                    report = std::move(report)]() mutable {
            onCheapAudited(taskId, std::move(judgement), std::move(report));
        });
    });
}

std::shared_ptr<verify::AuditProbes> GraphDecisions::probesOf(const std::string& jobId) {
    std::shared_ptr<verify::AuditProbes>& shared = m_auditProbes[jobId];
    if (!shared) {
        if (m_auditProbes.size() > 64) // a bound: other jobs remake theirs on their next audit
            std::erase_if(m_auditProbes, [](const auto& entry) { return entry.second; });
        shared = std::make_shared<verify::AuditProbes>();
    }
    return shared;
}

GraphTask* GraphDecisions::afterNodeCheck(std::int64_t taskId, double seconds) {
    GraphTask* task = m_book.task(taskId);
    if (!task)
        return nullptr; // released meanwhile
    task->nodeComputing = false;
    m_book.jobOf(*task).verifySeconds += seconds;
    return task->settled() ? nullptr : task;
}

void GraphDecisions::onCheapAudited(std::int64_t taskId, verify::Judgement judgement,
                                    verify::CheapAuditReport report) {
    GraphTask* found = afterNodeCheck(taskId, report.seconds);
    if (!found)
        return;
    GraphTask& task = *found;
    if (task.replicas.size() != judgement.verdicts.size() || dropQuarantined(task)) {
        task.audited = false; // what was audited changed: judge (and draw) again
        return judge(task);
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
    m_cheaplyAudited.insert(taskId);
    decide(task, std::move(judgement));
}

void GraphDecisions::computeOnNode(GraphTask& task) {
    if (task.nodeComputing || task.settled())
        return;
    task.nodeComputing = true;
    runReference(task, [this](std::int64_t taskId, Expected<std::vector<core::Tensor>> outputs,
                              double seconds) {
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
        m_scheduler.withdraw(kOp, taskId);
        m_book.dropQueued(taskId);
        judge(current);
    });
}

void GraphDecisions::runReference(const GraphTask& task, ReferenceDone done) {
    const GraphChunk& chunk = m_book.jobOf(task).chunks[task.chunk];
    asio::post(m_context.workers, [this, taskId = task.id, graph = chunk.graph, plan = chunk.plan,
                                   inputs = valuesOf(chunk.inputs), done = std::move(done)] {
        const auto start = std::chrono::steady_clock::now();
        auto outputs = reference::runGraph(graph, plan, inputs);
        const double seconds = secondsSince(start);
        asio::post(m_context.core, [taskId, outputs = std::move(outputs), seconds,
                                    done = std::move(done)]() mutable {
            done(taskId, std::move(outputs), seconds);
        });
    });
}

void GraphDecisions::decide(GraphTask& task, verify::Judgement judgement) {
    task.deciding = true;
    m_scheduler.withdraw(kOp, task.id);
    m_book.dropQueued(task.id);
    // Hashing and writing the outputs is O(size): a worker does it; they reach the disk before the
    // verdicts commit, so a restarted node finds them.
    std::vector<core::Tensor> outputs = task.replicas[judgement.decisive].outputs;
    outputs.resize(std::min(outputs.size(), keptOutputCount(task)));
    asio::post(m_context.workers, [this, taskId = task.id, judgement = std::move(judgement),
                                   outputs = std::move(outputs)]() mutable {
        auto stored = storeTensors(m_context.blobs, outputs);
        asio::post(m_context.core, [this, taskId, judgement = std::move(judgement),
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
            if (dropQuarantined(*found)) { // caught while its outputs were stored
                found->deciding = false;
                m_cheaplyAudited.erase(taskId);
                return judge(*found);
            }
            commitDecision(taskId, judgement, json::serialize(*stored), std::move(outputs));
        });
    });
}

void GraphDecisions::commitDecision(std::int64_t taskId, const verify::Judgement& judgement,
                                    std::string storedOutputs,
                                    std::vector<core::Tensor> keptOutputs) {
    GraphTask& task = *m_book.task(taskId);
    const std::string method = methodOf(task, judgement);
    m_cheaplyAudited.erase(taskId);
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
        decided.deciding = false;
        decided.decided = true;
        // What was not stored (a checked task's witnesses) is needed no more in memory either.
        decided.outputs = std::move(kept);
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

// A task of a job that wants one opinion was checked by the node itself (Freivalds and the bitwise
// recomputation of the rest): nothing rests on an agreement a later quarantine could undo, so no
// recheck ever reads its witnesses again and only the researcher's outputs are stored. A job of
// replicas keeps them all, for the recheck to compare (docs/verification.md).
std::size_t GraphDecisions::keptOutputCount(const GraphTask& task) const {
    const GraphJob& job = m_book.jobOf(task);
    const GraphChunk& chunk = job.chunks[task.chunk];
    const std::size_t all = chunk.graph.outputs.size();
    return opinionsWanted(job) == 1 ? all - chunk.witnesses : all;
}

std::string GraphDecisions::methodOf(const GraphTask& task,
                                     const verify::Judgement& judgement) const {
    if (!task.replicas[judgement.decisive].fromNode())
        return m_cheaplyAudited.contains(task.id) ? "node-audit" : "replica-agreement";
    if (task.audited)
        return "node-audit";
    return task.tiebreak ? "node-tiebreak" : "node-compute";
}

bool GraphDecisions::dropQuarantined(GraphTask& task) {
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

void GraphDecisions::onQuarantined(const std::string& volunteerId) {
    for (std::int64_t taskId : m_book.taskIds()) {
        GraphTask* task = m_book.task(taskId);
        if (!task || !task->involved.contains(volunteerId) ||
            m_book.jobOf(*task).state != JobState::Running)
            continue;
        if (!task->settled()) {
            // In-flight comparisons and node computations drop it when they come back.
            if (!task->judging && !task->nodeComputing)
                judge(*task);
            continue;
        }
        const bool contributed = std::any_of(
            task->replicas.begin(), task->replicas.end(),
            [&](const verify::Replica& replica) { return replica.volunteerId == volunteerId; });
        // A task the node checked alone (GraphVerification::Freivalds) rests on no agreement.
        if (task->decided && !task->nodeOutputs && contributed && !task->redeciding &&
            opinionsWanted(m_book.jobOf(*task)) > 1)
            recheck(*task);
    }
}

void GraphDecisions::recheck(GraphTask& task) {
    task.redeciding = true;
    GraphJob& job = m_book.jobOf(task);
    ++job.redeciding;
    const GraphChunk& chunk = job.chunks[task.chunk];
    // Recomputing, comparing and storing are O(size): a worker does them, core only records.
    asio::post(m_context.workers, [this, taskId = task.id, graph = chunk.graph, plan = chunk.plan,
                                   inputs = valuesOf(chunk.inputs), tolerances = chunk.tolerances,
                                   replicas = task.replicas]() mutable {
        const auto start = std::chrono::steady_clock::now();
        RecheckOutcome outcome{reference::runGraph(graph, plan, inputs), {}, std::nullopt, 0};
        if (outcome.reference) {
            verify::Replica node;
            node.backend = "node-reference";
            node.outputs = *outcome.reference;
            replicas.push_back(std::move(node));
            const verify::Judgement judgement = verify::judgeReplicas(tolerances, replicas);
            for (std::size_t i = 0; i + 1 < replicas.size(); ++i)
                if (!judgement.verdicts[i].accepted)
                    outcome.overturned.emplace_back(replicas[i].attempt, replicas[i].volunteerId);
        }
        if (!outcome.overturned.empty()) {
            // The decided outputs came from a replica the node now rejects: the node's replace
            // them.
            auto tensors = storeTensors(m_context.blobs, *outcome.reference);
            if (!tensors)
                outcome.reference =
                    tl::unexpected(Error{ErrorCode::Internal, tensors.error().message});
            else
                outcome.stored = json::serialize(*tensors);
        }
        outcome.seconds = secondsSince(start);
        asio::post(m_context.core, [this, taskId, outcome = std::move(outcome)]() mutable {
            onRechecked(taskId, std::move(outcome));
        });
    });
}

void GraphDecisions::onRechecked(std::int64_t taskId, RecheckOutcome outcome) {
    GraphTask* found = m_book.task(taskId);
    if (!found)
        return;
    GraphTask& task = *found;
    GraphJob& job = m_book.jobOf(task);
    task.redeciding = false;
    --job.redeciding;
    job.verifySeconds += outcome.seconds;
    if (!outcome.reference)
        return m_hooks.failJob(job, outcome.reference.error());
    const auto& overturned = outcome.overturned;
    const std::optional<std::string>& stored = outcome.stored;
    Database& db = m_context.store.database();
    auto written = [&]() -> Expected<void> {
        auto transaction = Transaction::begin(db);
        if (!transaction)
            return tl::unexpected(transaction.error());
        for (const auto& [attempt, volunteer] : overturned)
            if (auto ok = overturnGraphVerdict(db, taskId, attempt, volunteer, "node-recheck",
                                               "the node's recheck after a quarantine disagrees");
                !ok)
                return ok;
        if (stored)
            if (auto ok = replaceGraphTaskOutputs(db, taskId, *stored); !ok)
                return ok;
        return transaction->commit();
    }();
    if (!written)
        return m_hooks.failJob(job, Error{ErrorCode::Internal, written.error().message});
    if (stored) {
        task.outputs = std::move(*outcome.reference);
        task.nodeOutputs = true;
    }
    m_context.log("graph task " + std::to_string(taskId) + " rechecked by the node: " +
                  (overturned.empty() ? std::string("its outputs stand")
                                      : std::to_string(overturned.size()) +
                                            " accepted replica(s) overturned, outputs replaced"));
    for (const auto& [attempt, volunteer] : overturned)
        m_trust.quarantine(volunteer, "graph task " + std::to_string(taskId) + " attempt " +
                                          std::to_string(attempt) +
                                          " overturned by the node's recheck");
    m_hooks.recheckDone(job);
}

} // namespace goblin::labnode
