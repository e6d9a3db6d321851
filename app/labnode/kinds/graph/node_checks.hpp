// The node's own work on a graph task, run on the worker pool and reported on core: the CPU
// reference computes the task's chunk (a tie-break, a full audit, a task volunteers gave up on), or
// a cheap audit checks a replica's outputs (cheap_audit.hpp), keyed from the node's CSPRNG when it
// is asked, after the results are in. The Freivalds probes of a job's weights are shared by its
// audits. Core thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "goblin/verify/cheap_audit.hpp"
#include "kinds/graph/graph_book.hpp"
#include "node/node_context.hpp"

namespace goblin::labnode {

class NodeChecks {
public:
    NodeChecks(NodeContext& context, GraphBook& book);

    // The task's chunk computed by the node's CPU reference; `done` runs on core.
    using ReferenceDone =
        std::function<void(std::int64_t task, Expected<std::vector<core::Tensor>>, double seconds)>;
    void runReference(const GraphTask& task, ReferenceDone done);

    // A cheap audit of `claimed` (a replica's outputs, witnesses included); `done` runs on core.
    using AuditDone = std::function<void(std::int64_t task, verify::CheapAuditReport report)>;
    void cheapAudit(const GraphTask& task, std::vector<core::Tensor> claimed,
                    verify::GreyZone greyZone, AuditDone done);

    // A node check came back after `seconds`: the task when it still waits for a decision
    // (null when it was released or decided meanwhile). Counts the seconds to its job.
    GraphTask* afterNodeCheck(std::int64_t taskId, double seconds);

private:
    std::shared_ptr<verify::AuditProbes> probesOf(const std::string& jobId);

    NodeContext& m_context;
    GraphBook& m_book;
    // Per job: the Freivalds probes of its constant matmul operands, shared by its audits.
    std::map<std::string, std::shared_ptr<verify::AuditProbes>> m_auditProbes;
};

} // namespace goblin::labnode
