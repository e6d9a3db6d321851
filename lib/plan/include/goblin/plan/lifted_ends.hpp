// A graph's trivial ends, taken out before it is cut into stages so that no stage holds a whole
// tensor only to slice it or to concatenate parts of it (a training step's flat parameter vector,
// read by one slice per parameter, and its flat gradient, one concat of every parameter's
// gradient): a graph input that only contiguous slices read becomes one input per slice (whoever
// runs the stages slices the tensor), and an output that is a concat of values computed by nodes
// becomes one output per part (whoever merges concatenates them). Slicing and concatenating copy
// elements, so every value keeps its bits. Value ids do not change: a lifted slice's value is an
// input under the slice node's id. With LiftRules::throughViews an input is also lifted through
// chains of slices, reshapes and permutes (a parameter's weight reshaped, transposed and cut into
// matmul tiles): the node makes the value after the chain's last slice. Pure; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "goblin/core/graph/graph.hpp"
#include "goblin/core/ops/attributes.hpp"
#include "goblin/core/ops/op_code.hpp"

namespace goblin::plan {

// One op the node applies to make a lifted input: a slice, reshape or permute of the graph with
// its attributes (the executors' semantics: reference::runOp).
struct ViewStep {
    core::ops::OpCode op = core::ops::OpCode::Slice;
    core::ops::Attributes attrs;

    bool operator==(const ViewStep&) const = default;
    bool operator<(const ViewStep& other) const {
        return op != other.op ? op < other.op : attrs < other.attrs;
    }
};

// Where an input of the lifted graph comes from: input `input` of the original graph, whole
// (no steps) or made from it by `steps` in order (one slice, unless lifted through views).
struct LiftedSource {
    std::size_t input = 0;
    std::vector<ViewStep> steps;
};

struct LiftRules {
    // Lift through chains of slices, reshapes and permutes (lab node planner 4), not only an
    // input's own contiguous slices.
    bool throughViews = false;
};

// How an output of the original graph is made from the lifted graph's outputs: `parts` of them
// (1: the output itself), concatenated along `dim` in order.
struct OutputParts {
    std::size_t parts = 1;
    int dim = 0;
};

// What an output of the lifted graph is: part `part` of output `output` of the original.
struct LiftedOutput {
    std::size_t output = 0;
    std::size_t part = 0;
};

struct LiftedEnds {
    core::graph::Graph graph;
    std::vector<LiftedSource> inputs;  // per input of `graph`
    std::vector<LiftedOutput> outputs; // per output of `graph`
    std::vector<OutputParts> parts;    // per output of the original graph
    bool changed = false;              // false: `graph` is the original
};

LiftedEnds liftEnds(const core::graph::Graph& graph, const core::graph::GraphPlan& plan,
                    const LiftRules& rules = {});

} // namespace goblin::plan
