// The decider of graph tasks verified by Freivalds (GraphVerification::Freivalds): one volunteer
// computes a task, its heavy matmuls through any BLAS, and the node checks every such task itself
// with a cheap audit (cheap_audit.hpp) whose grey-zone matrices are checked exactly, per element,
// instead of recomputed bit for bit. An honest replica always passes (every bound is sound); a
// failed check rejects the replica (its volunteer is quarantined) and asks another volunteer.
// docs/verification.md, "Graph tasks checked by Freivalds". Core thread.
#pragma once

#include <cstdint>

#include "kinds/graph/graph_book.hpp"
#include "kinds/graph/node_checks.hpp"
#include "kinds/graph/task_verdicts.hpp"
#include "node/node_context.hpp"

namespace goblin::labnode {

class CheckedAloneDecider {
public:
    CheckedAloneDecider(NodeContext& context, NodeChecks& checks, TaskVerdicts& verdicts,
                        const DecisionHooks& hooks);

    // Checks the task's first replica: a task with one, not being checked or settled.
    void judge(GraphTask& task);

private:
    void onChecked(std::int64_t taskId, std::int64_t attempt, verify::CheapAuditReport report);

    NodeContext& m_context;
    NodeChecks& m_checks;
    TaskVerdicts& m_verdicts;
    const DecisionHooks& m_hooks;
};

} // namespace goblin::labnode
