#include "goblin/verify/graph_witnesses.hpp"

#include <algorithm>
#include <set>
#include <vector>

#include "goblin/verify/conv_check.hpp"

namespace goblin::verify {

double multiplyAddsOf(const core::graph::GraphNode& node, const core::graph::GraphPlan& plan) {
    double inner = 0;
    if (node.op == core::ops::OpCode::Matmul)
        inner = static_cast<double>(plan.specs.at(node.args.at(0)).shape.back());
    else
        inner = static_cast<double>(convSizesOf(node, plan).inner);
    double work = inner;
    for (std::int64_t dim : plan.specs.at(node.id).shape)
        work *= static_cast<double>(dim);
    return work;
}

bool isHeavyNode(const core::graph::GraphNode& node, const core::graph::GraphPlan& plan) {
    const core::DType dtype = plan.specs.at(node.id).dtype;
    if (dtype != core::DType::F32 && dtype != core::DType::F64)
        return false;
    if (node.op == core::ops::OpCode::Matmul)
        return plan.specs.at(node.args.at(0)).shape.back() >= kMinHeavyInner;
    const ConvSizes sizes = convSizesOf(node, plan);
    return sizes.inner >= kMinHeavyInner && sizes.perGroup >= kMinConvColumns;
}

std::size_t addWitnessOutputs(core::graph::Graph& graph, const core::graph::GraphPlan& plan,
                              std::size_t maxOutputs, std::int64_t minMatmulInner) {
    const std::set<core::graph::ValueId> outputs(graph.outputs.begin(), graph.outputs.end());
    const auto checked = [&](const core::graph::GraphNode& node) {
        return node.op != core::ops::OpCode::Matmul ||
               plan.specs.at(node.args.at(0)).shape.back() >= minMatmulInner;
    };
    std::vector<std::size_t> heavy; // positions in plan order
    for (std::size_t step = 0; step < plan.order.size(); ++step) {
        const core::graph::GraphNode& node = graph.nodes[plan.order[step]];
        if (isHeavyNode(node, plan) && checked(node) && !outputs.contains(node.id))
            heavy.push_back(step);
    }
    const std::size_t room =
        maxOutputs > graph.outputs.size() ? maxOutputs - graph.outputs.size() : 0;
    if (heavy.size() > room) {
        std::stable_sort(heavy.begin(), heavy.end(), [&](std::size_t left, std::size_t right) {
            return multiplyAddsOf(graph.nodes[plan.order[left]], plan) >
                   multiplyAddsOf(graph.nodes[plan.order[right]], plan);
        });
        heavy.resize(room);
        std::sort(heavy.begin(), heavy.end());
    }
    for (std::size_t step : heavy)
        graph.outputs.push_back(graph.nodes[plan.order[step]].id);
    return heavy.size();
}

std::vector<std::int64_t> checkedGemmNodes(const core::graph::Graph& graph,
                                           const core::graph::GraphPlan& plan, GemmOps ops) {
    using core::ops::OpCode;
    const std::set<core::graph::ValueId> outputs(graph.outputs.begin(), graph.outputs.end());
    const auto named = [ops](OpCode op) {
        if (op == OpCode::Matmul || op == OpCode::Conv2d)
            return true;
        return ops == GemmOps::WithConvGradients &&
               (op == OpCode::Conv2dInputGrad || op == OpCode::Conv2dWeightGrad);
    };
    std::vector<std::int64_t> nodes;
    for (const core::graph::GraphNode& node : graph.nodes)
        if (named(node.op) && outputs.contains(node.id) && isHeavyNode(node, plan))
            nodes.push_back(node.id);
    return nodes;
}

} // namespace goblin::verify
