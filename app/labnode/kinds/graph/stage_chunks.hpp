// The stages of a batch range as chunks (graph_chunks.hpp): the range's graph, its trivial ends
// lifted first where that helps (plan/lifted_ends.hpp), cut by plan/stage_cut into stages that
// fit the budget; each stage a chunk with its own graph, reading the researcher's inputs (or the
// node's slices of them) and the boundary values of earlier stages. Pure; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "goblin/plan/lifted_ends.hpp"
#include "kinds/graph/graph_chunks.hpp"

namespace goblin::labnode {

// The slices of whole inputs that lifted graph ends hand to stages, made once for every range:
// (the input's tensor, the steps that make the slice) → the slice and its digest (empty: not
// named, or a step on the way to slices that are).
using SliceCache = std::map<std::pair<const core::Tensor*, std::vector<plan::ViewStep>>,
                            std::pair<net::TensorPtr, std::string>>;

// Per node of graph.nodes: whether verification may make it an output (a witness).
std::vector<bool> witnessCandidates(const core::graph::Graph& graph,
                                    const core::graph::GraphPlan& plan);

// What a task running this graph holds, as `planner` counts it (StageBudget), its witnesses
// included.
std::int64_t heldByTask(const core::graph::Graph& graph, const core::graph::GraphPlan& plan,
                        int planner);

// What every chunk's graph gets once its plan is known: witnesses, then what depends on outputs,
// and what it holds as `planner` counts it.
void finishChunk(GraphChunk& chunk, GraphVerification verification, int planner);

// Why a range could not be cut (an empty reason: it was), and its biggest single value.
struct WhyWhole {
    std::string reason;
    std::int64_t bulkiestValueBytes = 0;
    std::string bulkiestValueNode;
};

// The stages of a batch range (its graph, plan and inputs in `range`) as chunks appended to
// `chunks`; why not, leaving `chunks` as it was, when the range cannot be cut.
Expected<WhyWhole> addStageChunks(std::vector<GraphChunk>& chunks, const GraphChunk& range,
                                  const StageBudget& budget, GraphVerification verification,
                                  const core::graph::GraphLimits& limits, SliceCache& cache);

} // namespace goblin::labnode
