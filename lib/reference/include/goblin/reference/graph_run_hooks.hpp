// What a graph executor calls back while it runs a graph: before each node, so a caller can pause
// (the volunteer's throttle waits there), keep a duty cycle, report progress or give up. Plain
// struct; the hooks run on the executor's (compute) thread.
#pragma once

#include <cstddef>
#include <functional>

namespace goblin::reference {

struct GraphRunHooks {
    // Before node `step` of `steps` (plan order). Returning false stops the run; the executor then
    // returns an Internal error that the caller, who asked to stop, ignores.
    std::function<bool(std::size_t step, std::size_t steps)> beforeNode;
};

} // namespace goblin::reference
