// When a volunteer is quarantined, every decided task of a running job that rests on its agreement
// is decided again without it: the node recomputes the task on a worker and compares every
// accepted replica with its own outputs; those that differ are overturned (their volunteers
// quarantined in turn) and the node's outputs replace the task's, in one transaction. A task the
// node checked alone (GraphVerification::Freivalds) rests on no agreement and is left alone.
// Core thread; recomputation, comparison and storage on the worker pool.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kinds/graph/graph_book.hpp"
#include "kinds/graph/task_verdicts.hpp"
#include "node/node_context.hpp"
#include "node/trust_book.hpp"

namespace goblin::labnode {

class QuarantineRecheck {
public:
    QuarantineRecheck(NodeContext& context, GraphBook& book, TrustBook& trust,
                      const DecisionHooks& hooks);

    // Rechecks the decided task when `volunteerId` contributed to it and nothing else did (its
    // outputs are not the node's, and it is not rechecked already). Its job waits for it.
    void recheckIfNeeded(GraphTask& task, const std::string& volunteerId);

private:
    void recheck(GraphTask& task);
    // What a recheck found, worked out on a worker: the node's outputs, the accepted replicas
    // they overturn (attempt, volunteer), and those outputs stored when they replace the task's.
    struct Outcome {
        Expected<std::vector<core::Tensor>> reference;
        std::vector<std::pair<std::int64_t, std::string>> overturned;
        std::optional<std::string> stored;
        double seconds = 0;
    };
    void onRechecked(std::int64_t taskId, Outcome outcome);

    NodeContext& m_context;
    GraphBook& m_book;
    TrustBook& m_trust;
    const DecisionHooks& m_hooks;
};

} // namespace goblin::labnode
