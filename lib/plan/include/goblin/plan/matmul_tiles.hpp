// Matmuls too big for one task, cut into tiles before a graph is cut into stages: C = A·B becomes
// the concat of A·B[:, cols] over column blocks when B is the bigger operand, or of
// A[rows, :]·B over row blocks when A is, so that each tile holds a block of the big operand and
// of C. Every element of C is still the same dot product summed in the same order, so the tiled
// graph gives the same bits on the executors that sum k in order (reference, canonical kernels).
// A C that only a flattening reshape reads (a weight's gradient joining the flat gradient) is cut
// into row blocks flattened one by one, so that no task holds C whole (plan/lifted_ends.hpp then
// makes each block an output part). Pure; any thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "goblin/core/graph/graph.hpp"

namespace goblin::plan {

struct TiledGraph {
    core::graph::Graph graph;
    std::size_t tiledNodes = 0; // 0: `graph` is the original
};

// Each matmul whose operands and value hold more than `budgetBytes` is cut into the fewest equal
// blocks that hold at most half of it each (the other half is for what a stage holds beside it);
// one it cannot cut that way (its other operand alone too big, or a C too big to join) is left
// as it is. Untouched nodes keep their place and ids; the tiles and slices get ids above the
// graph's largest, and the concat that joins them the id of the value it replaces.
TiledGraph tileWideMatmuls(const core::graph::Graph& graph, const core::graph::GraphPlan& plan,
                           std::int64_t budgetBytes);

} // namespace goblin::plan
