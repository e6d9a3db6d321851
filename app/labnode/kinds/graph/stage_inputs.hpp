// The values stages of a graph job hand on (graph_chunks.hpp): a stage that becomes ready gets its
// boundary inputs from the decided stages it reads; when the node replaces a decided stage's
// outputs (its recheck after a quarantine overturned them), every task that read them, directly
// or not, is computed again from the new ones (TaskGraph::redoDependents): once none of them is
// being decided, their stored outputs are dropped in one transaction, their replicas and leases
// forgotten, and the job waits for them before it merges. Core thread.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kinds/graph/graph_book.hpp"
#include "node/node_context.hpp"
#include "work/scheduler.hpp"

namespace goblin::labnode {

class StageInputs {
public:
    using FailJob = std::function<void(GraphJob&, const Error&)>;

    StageInputs(NodeContext& context, GraphBook& book, Scheduler& scheduler, FailJob failJob);

    // Gives those of `tasks` that are queued their boundary inputs.
    Expected<void> fillQueued(GraphJob& job, const std::vector<std::int64_t>& tasks);
    // The node replaced a decided task's outputs: what read them is computed again.
    void onOutputsReplaced(GraphTask& task);
    // Computes again what read replaced outputs, unless one of those tasks is being decided now.
    void redoIfPending(GraphJob& job);
    // The same for every loaded job (the periodic check).
    void redoWherePending();

private:
    bool busy(const GraphTask& task) const;

    NodeContext& m_context;
    GraphBook& m_book;
    Scheduler& m_scheduler;
    FailJob m_failJob;
};

} // namespace goblin::labnode
