#include "kinds/graph/quarantine_recheck.hpp"

#include <algorithm>
#include <chrono>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include "goblin/reference/graph_executor.hpp"
#include "kinds/graph/graph_blobs.hpp"
#include "kinds/graph/graph_store.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;
namespace json = boost::json;

QuarantineRecheck::QuarantineRecheck(NodeContext& context, GraphBook& book, TrustBook& trust,
                                     const DecisionHooks& hooks)
    : m_context(context), m_book(book), m_trust(trust), m_hooks(hooks) {}

void QuarantineRecheck::recheckIfNeeded(GraphTask& task, const std::string& volunteerId) {
    const bool contributed = std::any_of(
        task.replicas.begin(), task.replicas.end(),
        [&](const verify::Replica& replica) { return replica.volunteerId == volunteerId; });
    if (m_book.decided(task) && !task.nodeOutputs && contributed && !task.redeciding &&
        opinionsWanted(m_book.jobOf(task)) > 1)
        recheck(task);
}

void QuarantineRecheck::recheck(GraphTask& task) {
    task.redeciding = true;
    GraphJob& job = m_book.jobOf(task);
    ++job.redeciding;
    m_book.callOffMerge(job, "task " + std::to_string(task.id) + " is rechecked");
    const GraphChunk& chunk = job.chunks[task.chunk];
    // Recomputing, comparing and storing are O(size): a worker does them, core only records.
    const std::size_t researcherOutputs = chunk.researcherOutputs();
    asio::post(m_context.workers, [this, taskId = task.id, graph = chunk.graph, plan = chunk.plan,
                                   inputs = valuesOf(chunk.inputs), tolerances = chunk.tolerances,
                                   replicas = task.replicas, researcherOutputs]() mutable {
        const auto start = std::chrono::steady_clock::now();
        Outcome outcome{reference::runGraph(graph, plan, inputs), {}, std::nullopt, 0};
        if (outcome.reference) {
            // The researcher's outputs are compared (a decided task keeps no witnesses).
            outcome.reference->resize(researcherOutputs);
            tolerances.resize(researcherOutputs);
            for (verify::Replica& replica : replicas)
                if (replica.outputs.size() > researcherOutputs)
                    replica.outputs.resize(researcherOutputs);
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
        outcome.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        asio::post(m_context.core, [this, taskId, outcome = std::move(outcome)]() mutable {
            onRechecked(taskId, std::move(outcome));
        });
    });
}

void QuarantineRecheck::onRechecked(std::int64_t taskId, Outcome outcome) {
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
    std::string replaced; // the outputs the node's replace
    auto written = [&]() -> Expected<void> {
        auto transaction = Transaction::begin(db);
        if (!transaction)
            return tl::unexpected(transaction.error());
        for (const auto& [attempt, volunteer] : overturned)
            if (auto ok = overturnGraphVerdict(db, taskId, attempt, volunteer, "node-recheck",
                                               "the node's recheck after a quarantine disagrees");
                !ok)
                return ok;
        if (stored) {
            auto previous = replaceGraphTaskOutputs(db, taskId, *stored);
            if (!previous)
                return tl::unexpected(previous.error());
            replaced = std::move(*previous);
        }
        return transaction->commit();
    }();
    if (!written)
        return m_hooks.failJob(job, Error{ErrorCode::Internal, written.error().message});
    deleteUnusedBlobs(m_context.store, m_context.blobs, replaced);
    if (stored) {
        task.outputs = std::move(*outcome.reference);
        task.nodeOutputs = true;
        if (m_hooks.outputsReplaced)
            m_hooks.outputsReplaced(task);
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
