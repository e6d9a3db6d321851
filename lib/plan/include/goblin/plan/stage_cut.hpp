// Cuts a graph too big for one volunteer into stages: consecutive runs of its nodes (in a
// topological order) whose values fit a byte budget, counted as the lab node counts a task's
// memory (StageMeasure). Among the cuts with the fewest stages, the one whose boundaries carry the
// fewest bytes wins, then the one whose heaviest stage costs least (dynamic programming over the
// cut positions). A stage takes the graph inputs it reads, its constants, and the values earlier
// stages computed for it (boundary values, same value ids); it outputs the researcher's outputs it
// computes (in the graph's output order) and then the values later stages read. Stages compute
// exactly the nodes of the whole graph, so their values are the same bits. Pure; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "goblin/core/error.hpp"
#include "goblin/core/graph/graph.hpp"

namespace goblin::plan {

// Where one input of a stage comes from: input `index` of the whole graph, or output `output`
// of the earlier stage `stage`.
struct StageSource {
    enum class Kind { GraphInput, Boundary };
    Kind kind = Kind::GraphInput;
    std::size_t index = 0; // GraphInput
    std::size_t stage = 0; // Boundary
    std::size_t output = 0;

    bool operator==(const StageSource&) const = default;
};

struct GraphStage {
    core::graph::Graph graph;          // inputs in the order of `sources`
    std::vector<StageSource> sources;  // one per graph.inputs entry
    std::size_t researcherOutputs = 0; // graph.outputs' first ones are the researcher's
    std::int64_t bytes = 0;            // what it holds, by the cut's measure
};

// Where researcher output o of the whole graph is: output `output` of stage `stage`.
struct OutputPlace {
    std::size_t stage = 0;
    std::size_t output = 0;
};

struct StageCut {
    std::vector<GraphStage> stages;
    std::vector<OutputPlace> outputs; // per output of the whole graph
    std::int64_t boundaryBytes = 0;   // what the stages hand on, in all
};

// What a stage's budget counts, and the order its nodes are taken in.
//  HeldAtOnce: what a volunteer running the stage holds at its fullest (executors drop a value
//    after its last reader): its inputs and constants throughout, and at each node the node values
//    made so far that are still to be read, the graph's outputs and the `keptToEnd` ones held to
//    the end. Nodes are taken in the plan's order, except that a node that only rearranges
//    inputs, constants and such nodes' values (a parameter's reshape or transpose: cast,
//    reshape, permute, expand, slice, concat) runs just before its first reader, not up front. A
//    stage's nodes are listed in that order, which the executors keep (validateGraph runs the
//    listed order where it can).
//  EveryValue: each input, constant and node value a stage holds, in breadth-first order (how
//    jobs were cut before; they reload with the cut they were given).
enum class StageMeasure { HeldAtOnce, EveryValue };

struct CutRules {
    StageMeasure measure = StageMeasure::HeldAtOnce;
    // Optional, one per node of graph.nodes: the work of each node (its FLOPs, say); among the
    // cuts with the fewest stages and the fewest crossing bytes, the one whose heaviest stage
    // costs least wins, so that a pipeline's stages are balanced.
    std::vector<double> nodeCosts;
    // Optional, one per node of graph.nodes: values a task may output besides its stage's own
    // (witnesses), which HeldAtOnce then holds to the end.
    std::vector<bool> keptToEnd;
    // Optional (0: no limit): the most values a stage may take as inputs (graph inputs and
    // earlier stages' values: the tensors its task carries), as inputs and constants together
    // (what a graph may declare), and output (the graph's outputs it makes and the values it
    // hands on: the tensors its result carries).
    std::size_t maxStageInputs = 0;
    std::size_t maxStageInputsAndConstants = 0;
    std::size_t maxStageOutputs = 0;
};

// Bytes of a value of this dtype and shape (0 where they overflow: validation refuses those).
std::int64_t specBytes(const core::ops::TensorSpec& spec);

// Bytes of every value of a validated graph (its inputs, constants and node values).
std::int64_t graphValueBytes(const core::graph::GraphPlan& plan);

// What running a validated graph in its plan's order holds at its fullest (HeldAtOnce), with its
// outputs and the nodes `keptToEnd` marks (one per node of graph.nodes, optional) held to the end.
std::int64_t heldAtOnce(const core::graph::Graph& graph, const core::graph::GraphPlan& plan,
                        const std::vector<bool>& keptToEnd = {});

// Fails (LimitExceeded) when one node alone, with what it reads, exceeds the budget; and
// (InvalidInput) when an output of the graph is an input or a constant (no stage computes it), or
// the rules' per-node lists are not one per node.
Expected<StageCut> cutIntoStages(const core::graph::Graph& graph,
                                 const core::graph::GraphPlan& plan, std::int64_t budgetBytes,
                                 const CutRules& rules = {});

} // namespace goblin::plan
