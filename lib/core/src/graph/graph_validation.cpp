// validateGraph: every check a graph passes before an executor sees it.
#include <functional>
#include <queue>
#include <string>
#include <unordered_map>

#include "goblin/core/graph/graph.hpp"

namespace goblin::core::graph {
namespace {

std::string valueName(ValueId id) {
    return "value " + std::to_string(id);
}

Expected<void> checkSize(const ops::TensorSpec& spec, const GraphLimits& limits, ValueId id) {
    auto bytes = byteSize(spec.dtype, spec.shape);
    if (!bytes)
        return makeError(bytes.error().code, valueName(id) + ": " + bytes.error().message);
    if (*bytes > limits.maxValueBytes)
        return makeError(ErrorCode::LimitExceeded,
                         valueName(id) + " needs " + std::to_string(*bytes) +
                             " bytes, over the limit of " + std::to_string(limits.maxValueBytes));
    return {};
}

Expected<void> checkCounts(const Graph& graph, const GraphLimits& limits) {
    if (graph.catalogVersion != ops::kCatalogVersion)
        return makeError(ErrorCode::VersionMismatch,
                         "graph uses catalog " + std::to_string(graph.catalogVersion) +
                             "; this build runs catalog " + std::to_string(ops::kCatalogVersion));
    if (graph.nodes.size() > limits.maxNodes)
        return makeError(ErrorCode::LimitExceeded,
                         "graph has " + std::to_string(graph.nodes.size()) +
                             " nodes, over the limit of " + std::to_string(limits.maxNodes));
    if (graph.inputs.size() + graph.constants.size() > limits.maxInputs)
        return makeError(ErrorCode::LimitExceeded, "graph has too many inputs and constants");
    if (graph.outputs.empty())
        return makeError(ErrorCode::InvalidInput, "graph has no outputs");
    return {};
}

// Kahn's algorithm over node → node edges, taking the ready node listed first: a graph listed in
// an order its values allow runs in that order (a capture's program order, a stage's planned
// order), so that what a task holds at once is what its planner counted. Leftover nodes sit on a
// cycle.
Expected<std::vector<std::size_t>>
topologicalOrder(const Graph& graph, const std::unordered_map<ValueId, std::size_t>& producer) {
    const std::size_t n = graph.nodes.size();
    std::vector<std::size_t> pending(n, 0);
    std::vector<std::vector<std::size_t>> users(n);
    for (std::size_t i = 0; i < n; ++i)
        for (ValueId arg : graph.nodes[i].args)
            if (auto it = producer.find(arg); it != producer.end()) {
                ++pending[i];
                users[it->second].push_back(i);
            }
    std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
    for (std::size_t i = 0; i < n; ++i)
        if (pending[i] == 0)
            ready.push(i);
    std::vector<std::size_t> order;
    order.reserve(n);
    while (!ready.empty()) {
        const std::size_t next = ready.top();
        ready.pop();
        order.push_back(next);
        for (std::size_t user : users[next])
            if (--pending[user] == 0)
                ready.push(user);
    }
    if (order.size() == n)
        return order;
    for (std::size_t i = 0; i < n; ++i)
        if (pending[i] != 0)
            return makeError(ErrorCode::InvalidInput,
                             "graph has a cycle through node " + valueName(graph.nodes[i].id));
    return makeError(ErrorCode::Internal, "topological order lost a node");
}

} // namespace

Expected<GraphPlan> validateGraph(const Graph& graph, const GraphLimits& limits) {
    if (auto counts = checkCounts(graph, limits); !counts)
        return tl::unexpected(counts.error());
    GraphPlan plan;
    auto define = [&](ValueId id, const ops::TensorSpec& spec) -> Expected<void> {
        if (id < 0)
            return makeError(ErrorCode::InvalidInput, "negative value id " + std::to_string(id));
        if (!plan.specs.emplace(id, spec).second)
            return makeError(ErrorCode::InvalidInput, valueName(id) + " is defined twice");
        return checkSize(spec, limits, id);
    };
    std::size_t constantBytes = 0;
    for (const GraphInput& input : graph.inputs)
        if (auto defined = define(input.id, input.spec); !defined)
            return tl::unexpected(defined.error());
    for (const GraphConstant& constant : graph.constants) {
        constantBytes += constant.value.byteSize();
        if (constantBytes > limits.maxConstantBytes)
            return makeError(ErrorCode::LimitExceeded, "graph constants exceed the size limit");
        if (auto defined = define(constant.id, {constant.value.dtype(), constant.value.shape()});
            !defined)
            return tl::unexpected(defined.error());
    }
    std::unordered_map<ValueId, std::size_t> producer;
    for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
        const GraphNode& node = graph.nodes[i];
        if (node.op >= ops::OpCode::Count)
            return makeError(ErrorCode::InvalidInput,
                             "node " + valueName(node.id) + " has an unknown op");
        if (node.id < 0 || plan.specs.count(node.id) != 0 || !producer.emplace(node.id, i).second)
            return makeError(ErrorCode::InvalidInput,
                             valueName(node.id) + " is defined twice or negative");
        if (node.args.size() > limits.maxArgs)
            return makeError(ErrorCode::LimitExceeded,
                             "node " + valueName(node.id) + " has too many args");
    }
    for (const GraphNode& node : graph.nodes)
        for (ValueId arg : node.args)
            if (plan.specs.count(arg) == 0 && producer.count(arg) == 0)
                return makeError(ErrorCode::InvalidInput,
                                 std::string(ops::opInfo(node.op).name) + " node " +
                                     valueName(node.id) + " reads " + valueName(arg) +
                                     ", which no input, constant or node defines");
    auto order = topologicalOrder(graph, producer);
    if (!order)
        return tl::unexpected(order.error());
    plan.order = std::move(*order);
    for (std::size_t index : plan.order) {
        const GraphNode& node = graph.nodes[index];
        std::vector<ops::TensorSpec> args;
        for (ValueId arg : node.args)
            args.push_back(plan.specs.at(arg));
        auto spec = ops::inferOutput(node.op, args, node.attrs);
        if (!spec)
            return makeError(spec.error().code,
                             "node " + valueName(node.id) + ": " + spec.error().message);
        if (auto defined = define(node.id, *spec); !defined)
            return tl::unexpected(defined.error());
    }
    for (ValueId output : graph.outputs)
        if (plan.specs.count(output) == 0)
            return makeError(ErrorCode::InvalidInput,
                             "output " + valueName(output) + " is not defined");
    return plan;
}

} // namespace goblin::core::graph
