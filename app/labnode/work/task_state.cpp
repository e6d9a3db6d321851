#include "work/task_state.hpp"

#include <array>
#include <utility>

namespace goblin::labnode {

namespace {

using S = TaskState;

// Every (from, to) pair the engine knows, with the stimulus that causes it.
constexpr std::array<std::pair<TaskState, TaskState>, 18> kTransitions{{
    {S::Waiting, S::Queued},    // its last dependency was decided
    {S::Queued, S::Leased},     // a volunteer took its last wanted opinion, or none is wanted
    {S::Queued, S::Deciding},   // the node computes it
    {S::Leased, S::Queued},     // the lease was lost, or the result was rejected
    {S::Leased, S::Deciding},   // a result arrived, or the node computes it
    {S::Deciding, S::Queued},   // the result was rejected: computed again
    {S::Deciding, S::Leased},   // the decision was called off: judged again
    {S::Deciding, S::Decided},  // the result was accepted
    {S::Decided, S::Queued},    // reopened: a volunteer of it was caught after the fact
    {S::Queued, S::Waiting},    // a dependency was reopened, or it waits on new ones
    {S::Leased, S::Waiting},    // a dependency was reopened (the lease is withdrawn)
    {S::Deciding, S::Waiting},  // a dependency was reopened (the verdict will be stale)
    {S::Decided, S::Waiting},   // a dependency was reopened: its output was computed from it
    {S::Waiting, S::Cancelled}, // its job ended
    {S::Queued, S::Cancelled},
    {S::Leased, S::Cancelled},
    {S::Deciding, S::Cancelled},
    {S::Decided, S::Cancelled},
}};

} // namespace

std::string_view taskStateName(TaskState state) {
    switch (state) {
    case S::Waiting:
        return "waiting";
    case S::Queued:
        return "queued";
    case S::Leased:
        return "leased";
    case S::Deciding:
        return "deciding";
    case S::Decided:
        return "decided";
    case S::Cancelled:
        return "cancelled";
    }
    return "unknown";
}

bool mayTransition(TaskState from, TaskState to) {
    for (const auto& [a, b] : kTransitions)
        if (a == from && b == to)
            return true;
    return false;
}

} // namespace goblin::labnode
