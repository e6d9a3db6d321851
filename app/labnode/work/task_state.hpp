// The states of a task in the task engine and the one table of transitions between them
// (work/task_graph.hpp applies it). Pure; any thread.
#pragma once

#include <string_view>

namespace goblin::labnode {

// Waiting: a dependency is not decided yet. Queued: ready, wants volunteer opinions (one, or one
// per replica). Leased: every wanted opinion is out (the replicas in are compared meanwhile, the
// node may compute it to compare). Deciding: the node decides it: checks a result, computes it,
// records the verdict. Decided: its output is accepted and may feed its dependents. Cancelled:
// its job ended before it did.
enum class TaskState { Waiting, Queued, Leased, Deciding, Decided, Cancelled };

std::string_view taskStateName(TaskState state);

// Whether the engine may move a task from `from` to `to` (the transition table).
bool mayTransition(TaskState from, TaskState to);

} // namespace goblin::labnode
