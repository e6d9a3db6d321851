// A graph's trivial ends, taken out before it is cut into stages so that no stage holds a whole
// tensor only to slice it or to concatenate parts of it (a training step's flat parameter vector,
// read by one slice per parameter, and its flat gradient, one concat of every parameter's
// gradient): a graph input that only contiguous slices read becomes one input per slice (whoever
// runs the stages slices the tensor), and an output that is a concat of values computed by nodes
// becomes one output per part (whoever merges concatenates them). Slicing and concatenating copy
// elements, so every value keeps its bits. Value ids do not change: a lifted slice's value is an
// input under the slice node's id. Pure; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "goblin/core/graph/graph.hpp"

namespace goblin::plan {

// Where an input of the lifted graph comes from: input `input` of the original graph, whole or
// its elements [start, end) along `dim`.
struct LiftedSource {
    std::size_t input = 0;
    bool sliced = false;
    int dim = 0;
    std::int64_t start = 0;
    std::int64_t end = 0;
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

LiftedEnds liftEnds(const core::graph::Graph& graph, const core::graph::GraphPlan& plan);

} // namespace goblin::plan
