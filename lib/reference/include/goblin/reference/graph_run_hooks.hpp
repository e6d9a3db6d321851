// What a graph executor calls back while it runs a graph: before each node, so a caller can pause
// (the volunteer's throttle waits there), keep a duty cycle, report progress or give up. Plain
// struct; the hooks run on the executor's (compute) thread.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>

#include "goblin/core/error.hpp"
#include "goblin/core/graph/graph.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::reference {

struct GraphRunHooks {
    // Before node `step` of `steps` (plan order). Returning false stops the run; the executor then
    // returns an Internal error that the caller, who asked to stop, ignores.
    std::function<bool(std::size_t step, std::size_t steps)> beforeNode;
    // Computes a node in the executor's place when it returns a value (the volunteer's BLAS for
    // the matmuls the lab node checks by Freivalds); nullopt runs the executor's own kernel. The
    // CPU reference executor calls it; its args are the node's, in order.
    std::function<std::optional<Expected<core::Tensor>>(const core::graph::GraphNode& node,
                                                        std::span<const core::Tensor> args)>
        computeNode;
};

} // namespace goblin::reference
