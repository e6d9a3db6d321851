#include "kinds/graph/graph_cost.hpp"

#include <algorithm>

#include "goblin/verify/graph_witnesses.hpp"

namespace goblin::labnode {

namespace {

double elementsOf(const core::Shape& shape) {
    double count = 1;
    for (std::int64_t dim : shape)
        count *= static_cast<double>(dim);
    return count;
}

} // namespace

double nodeFlops(const core::graph::GraphNode& node, const core::graph::GraphPlan& plan) {
    if (const double multiplyAdds = verify::multiplyAddsOf(node, plan); multiplyAdds > 0)
        return 2 * multiplyAdds;
    double largest = elementsOf(plan.specs.at(node.id).shape);
    for (core::graph::ValueId arg : node.args)
        largest = std::max(largest, elementsOf(plan.specs.at(arg).shape));
    return largest;
}

double graphFlops(const core::graph::Graph& graph, const core::graph::GraphPlan& plan) {
    double flops = 0;
    for (const core::graph::GraphNode& node : graph.nodes)
        flops += nodeFlops(node, plan);
    return flops;
}

} // namespace goblin::labnode
