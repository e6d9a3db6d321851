// The states of a task in the task engine and the one table of transitions between them
// (work/task_graph.hpp applies it). Pure; any thread.
#pragma once

#include <string_view>

namespace goblin::labnode {

// Waiting: a dependency is not decided yet. Queued: ready, waits for a volunteer. Leased: a
// volunteer holds it. Deciding: its result is being checked (or the node computes it). Decided:
// its output is accepted and may feed its dependents. Cancelled: its job ended before it did.
enum class TaskState { Waiting, Queued, Leased, Deciding, Decided, Cancelled };

std::string_view taskStateName(TaskState state);

// Whether the engine may move a task from `from` to `to` (the transition table).
bool mayTransition(TaskState from, TaskState to);

} // namespace goblin::labnode
