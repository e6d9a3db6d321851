#include "graph_decisions.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include "goblin/reference/graph_executor.hpp"
#include "graph_blobs.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

GraphDecisions::GraphDecisions(NodeContext& context, GraphBook& book, Scheduler& scheduler,
                               VerdictPath& verdicts, PeerRegistry& peers, double sampleRate,
                               std::uint64_t seed, Hooks hooks)
    : m_context(context), m_book(book), m_scheduler(scheduler), m_verdicts(verdicts),
      m_peers(peers), m_sampleRate(sampleRate), m_random(seed != 0 ? seed : std::random_device{}()),
      m_hooks(std::move(hooks)) {}

void GraphDecisions::addReplica(GraphTask& task, Replica replica, std::uint64_t peer) {
    task.replicas.push_back(std::move(replica));
    task.replicaPeers.push_back(peer);
    judge(task);
}

void GraphDecisions::rejectMalformed(GraphTask& task, const Lease& lease,
                                     const std::string& backend, double computeSeconds,
                                     const std::string& why) {
    VerdictRecord record{std::string(kOp),
                         task.id,
                         lease.attempt,
                         lease.volunteerId,
                         backend,
                         false,
                         "shape-gate",
                         INFINITY,
                         0,
                         0,
                         why,
                         0,
                         computeSeconds};
    m_context.log("graph task " + std::to_string(task.id) + " from " + lease.volunteerId +
                  " REJECTED: " + why);
    VerdictBatch batch;
    batch.verdicts.push_back({lease.peer, std::move(record)});
    batch.failed = [this, peer = lease.peer, taskId = task.id,
                    attempt = lease.attempt](const VerdictBatch&, const Error& error) {
        m_context.log("graph task " + std::to_string(taskId) + ": could not record a verdict (" +
                      error.message + ")");
        m_peers.send(peer, verdictMessage(taskId, attempt, VerdictWord::Rejected));
    };
    m_verdicts.commitNow(std::move(batch));
    m_hooks.wantOpinion(task);
}

void GraphDecisions::judge(GraphTask& task) {
    const bool nodeReplica = std::any_of(task.replicas.begin(), task.replicas.end(),
                                         [](const Replica& replica) { return replica.fromNode(); });
    // Two opinions are needed, unless the node computed it (the node's answer is trusted).
    if (task.judging || task.nodeComputing || task.settled() ||
        (task.replicas.size() < 2 && !nodeReplica))
        return;
    task.judging = true;
    const GraphChunk& chunk = m_book.jobOf(task).chunks[task.chunk];
    asio::post(m_context.workers, [this, taskId = task.id, tolerances = chunk.tolerances,
                                   replicas = task.replicas] {
        const auto start = std::chrono::steady_clock::now();
        Judgement judgement = judgeReplicas(tolerances, replicas);
        const double seconds = secondsSince(start);
        asio::post(m_context.core,
                   [this, taskId, count = replicas.size(), judgement = std::move(judgement),
                    seconds]() mutable { onJudged(taskId, count, std::move(judgement), seconds); });
    });
}

void GraphDecisions::onJudged(std::int64_t taskId, std::size_t judgedCount, Judgement judgement,
                              double seconds) {
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
    case Decision::NeedAnotherVolunteer:
        m_context.log("graph task " + std::to_string(task.id) +
                      ": the volunteers disagree; asking for another opinion");
        return m_hooks.wantOpinion(task);
    case Decision::NeedNodeReference:
        m_context.log("graph task " + std::to_string(task.id) +
                      ": no two volunteers agree; the node computes it");
        return computeOnNode(task);
    case Decision::Decided:
        break;
    }
    const bool nodeDecided = task.replicas[judgement.decisive].fromNode();
    std::bernoulli_distribution sample(std::clamp(m_sampleRate, 0.0, 1.0));
    if (!nodeDecided && !task.sampled && sample(m_random)) {
        task.sampled = true;
        return computeOnNode(task);
    }
    decide(task, std::move(judgement));
}

void GraphDecisions::computeOnNode(GraphTask& task) {
    if (task.nodeComputing || task.settled())
        return;
    task.nodeComputing = true;
    const GraphChunk& chunk = m_book.jobOf(task).chunks[task.chunk];
    asio::post(m_context.workers, [this, taskId = task.id, graph = chunk.graph, plan = chunk.plan,
                                   inputs = valuesOf(chunk.inputs)] {
        const auto start = std::chrono::steady_clock::now();
        auto outputs = reference::runGraph(graph, plan, inputs);
        const double seconds = secondsSince(start);
        asio::post(m_context.core, [this, taskId, outputs = std::move(outputs), seconds]() mutable {
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
            Replica replica;
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
    });
}

void GraphDecisions::decide(GraphTask& task, Judgement judgement) {
    task.deciding = true;
    m_scheduler.withdraw(kOp, task.id);
    m_book.dropQueued(task.id);
    // Hashing and writing the outputs is O(size): a worker does it; they reach the disk before the
    // verdicts commit, so a restarted node finds them.
    std::vector<core::Tensor> outputs = task.replicas[judgement.decisive].outputs;
    asio::post(m_context.workers, [this, taskId = task.id, judgement = std::move(judgement),
                                   outputs = std::move(outputs)]() mutable {
        auto stored = storeTensors(m_context.blobs, outputs);
        asio::post(m_context.core, [this, taskId, judgement = std::move(judgement),
                                    stored = std::move(stored)]() mutable {
            GraphTask* found = m_book.task(taskId);
            if (!found)
                return; // released meanwhile
            GraphJob& job = m_book.jobOf(*found);
            if (job.state != "running")
                return;
            if (!stored)
                return m_hooks.failJob(
                    job, Error{ErrorCode::Internal, "storing outputs: " + stored.error().message});
            commitDecision(taskId, judgement, json::serialize(*stored));
        });
    });
}

void GraphDecisions::commitDecision(std::int64_t taskId, const Judgement& judgement,
                                    std::string storedOutputs) {
    GraphTask& task = *m_book.task(taskId);
    const bool nodeDecided = task.replicas[judgement.decisive].fromNode();
    const std::string method = !nodeDecided   ? "replica-agreement"
                               : task.sampled ? "node-sample"
                                              : "node-tiebreak";
    VerdictBatch batch;
    for (std::size_t i = 0; i < task.replicas.size(); ++i) {
        const Replica& replica = task.replicas[i];
        if (replica.fromNode())
            continue;
        const ReplicaVerdict& verdict = judgement.verdicts[i];
        batch.verdicts.push_back(
            {task.replicaPeers[i],
             VerdictRecord{std::string(kOp), task.id, replica.attempt, replica.volunteerId,
                           replica.backend, verdict.accepted, method, verdict.ratio, 0, 0,
                           verdict.reason, 0, replica.computeSeconds}});
    }
    batch.alsoWrite = [taskId, outputs = std::move(storedOutputs)](Database& db) {
        return setGraphTaskAccepted(db, taskId, outputs);
    };
    batch.committed = [this, taskId, method,
                       decisive = judgement.decisive](const VerdictBatch& done) {
        const std::vector<VerdictBatch::Entry>& verdicts = done.verdicts;
        GraphTask& decided = *m_book.task(taskId);
        decided.deciding = false;
        decided.decided = true;
        decided.outputs = decided.replicas[decisive].outputs;
        for (const VerdictBatch::Entry& entry : verdicts)
            if (!entry.record.accepted)
                m_context.log("graph task " + std::to_string(taskId) + " attempt " +
                              std::to_string(entry.record.attempt) + " from volunteer " +
                              entry.record.volunteerId + " REJECTED (" + method +
                              "): " + entry.record.reason);
        m_hooks.decided(decided);
    };
    batch.failed = [this, taskId](const VerdictBatch&, const Error& error) {
        m_context.log("graph task " + std::to_string(taskId) + ": could not record its verdicts (" +
                      error.message + ")");
        m_hooks.failJob(m_book.jobOf(*m_book.task(taskId)),
                        Error{ErrorCode::Internal, error.message});
    };
    m_verdicts.commitNow(std::move(batch));
}

} // namespace goblin::labnode
