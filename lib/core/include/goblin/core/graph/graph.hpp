// The graph IR: inputs, constants and op nodes that each produce one value, named by integer value
// ids; outputs name values. Validated completely (validateGraph) before anything runs.
// A Graph is a plain value owned by one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "goblin/core/error.hpp"
#include "goblin/core/ops/op_catalog.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::core::graph {

using ValueId = std::int64_t;

struct GraphInput {
    ValueId id = 0;
    ops::TensorSpec spec;
};

struct GraphConstant {
    ValueId id = 0;
    Tensor value;
};

struct GraphNode {
    ValueId id = 0; // the value this node produces
    ops::OpCode op = ops::OpCode::Count;
    std::vector<ValueId> args;
    ops::Attributes attrs;
};

struct Graph {
    int catalogVersion = ops::kCatalogVersion;
    std::vector<GraphInput> inputs;
    std::vector<GraphConstant> constants;
    std::vector<GraphNode> nodes;
    std::vector<ValueId> outputs;
};

struct GraphLimits {
    std::size_t maxNodes = 10'000;
    std::size_t maxInputs = 256;
    std::size_t maxArgs = 8;
    std::size_t maxValueBytes = std::size_t{1} << 30;     // one input, constant or intermediate
    std::size_t maxConstantBytes = std::size_t{16} << 20; // all constants together (inline JSON)
};

// What validation learned: a topological order of the nodes (the listed order wherever the list
// allows it: the ready node listed first runs first) and every value's spec.
struct GraphPlan {
    std::vector<std::size_t> order; // indices into Graph::nodes
    std::map<ValueId, ops::TensorSpec> specs;
};

// Checks everything before anything runs: catalog version, duplicate or missing value ids, unknown
// ops, arity, dtype and shape inference of every node, cycles, oversize values, outputs.
Expected<GraphPlan> validateGraph(const Graph& graph, const GraphLimits& limits = {});

} // namespace goblin::core::graph
