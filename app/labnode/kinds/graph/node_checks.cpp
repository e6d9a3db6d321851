#include "kinds/graph/node_checks.hpp"

#include <chrono>

#include <boost/asio/post.hpp>

#include "goblin/reference/graph_executor.hpp"
#include "kinds/graph/keyed_random.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;

NodeChecks::NodeChecks(NodeContext& context, GraphBook& book) : m_context(context), m_book(book) {}

void NodeChecks::runReference(const GraphTask& task, ReferenceDone done) {
    const GraphChunk& chunk = m_book.chunkOf(task);
    asio::post(m_context.workers, [this, taskId = task.id, graph = chunk.graph, plan = chunk.plan,
                                   inputs = valuesOf(chunk.inputs), done = std::move(done)] {
        const auto start = std::chrono::steady_clock::now();
        auto outputs = reference::runGraph(graph, plan, inputs);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        asio::post(m_context.core, [taskId, outputs = std::move(outputs), seconds,
                                    done = std::move(done)]() mutable {
            done(taskId, std::move(outputs), seconds);
        });
    });
}

void NodeChecks::cheapAudit(const GraphTask& task, std::vector<core::Tensor> claimed,
                            verify::GreyZone greyZone, AuditDone done) {
    const GraphChunk& chunk = m_book.chunkOf(task);
    // The worker gets its own stream, keyed from the node's CSPRNG here on the core thread.
    asio::post(m_context.workers, [this, taskId = task.id, graph = chunk.graph, plan = chunk.plan,
                                   inputs = valuesOf(chunk.inputs), claimed = std::move(claimed),
                                   key = KeyedRandom::drawKey(m_context.random),
                                   probes = probesOf(task.jobId), greyZone,
                                   done = std::move(done)]() mutable {
        KeyedRandom random(key);
        verify::CheapAuditReport report =
            verify::runCheapAudit(graph, plan, inputs, claimed, {}, random, probes.get(), greyZone);
        asio::post(m_context.core,
                   [taskId, report = std::move(report), done = std::move(done)]() mutable {
                       done(taskId, std::move(report));
                   });
    });
}

std::shared_ptr<verify::AuditProbes> NodeChecks::probesOf(const std::string& jobId) {
    std::shared_ptr<verify::AuditProbes>& shared = m_auditProbes[jobId];
    if (!shared) {
        if (m_auditProbes.size() > 64) // a bound: other jobs remake theirs on their next audit
            std::erase_if(m_auditProbes, [](const auto& entry) { return entry.second; });
        shared = std::make_shared<verify::AuditProbes>();
    }
    return shared;
}

GraphTask* NodeChecks::afterNodeCheck(std::int64_t taskId, double seconds) {
    GraphTask* task = m_book.task(taskId);
    if (!task)
        return nullptr; // released meanwhile
    task->nodeComputing = false;
    m_book.jobOf(*task).verifySeconds += seconds;
    return m_book.settled(*task) ? nullptr : task;
}

} // namespace goblin::labnode
