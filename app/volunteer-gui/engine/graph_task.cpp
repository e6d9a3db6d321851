#include "graph_task.hpp"

#include <chrono>

#include <boost/json/serialize.hpp>

#include "goblin/compute/reference/graph_executor.hpp"
#include "goblin/core/graph/graph_json.hpp"

namespace goblin::volunteer {

Expected<GraphTaskResult> runGraphTask(const boost::json::value& graphJson,
                                       const std::vector<net::TensorPtr>& inputs,
                                       const core::graph::GraphLimits& limits) {
    if (!graphJson.is_object())
        return makeError(ErrorCode::InvalidMessage, "a graph task needs a 'graph' object");
    auto graph = core::graph::decodeGraph(boost::json::serialize(graphJson), limits);
    if (!graph)
        return tl::unexpected(graph.error());
    auto plan = core::graph::validateGraph(*graph, limits);
    if (!plan)
        return tl::unexpected(plan.error());
    if (inputs.size() != graph->inputs.size())
        return makeError(ErrorCode::InvalidMessage, "the task's tensors do not match the graph's inputs");
    std::vector<core::Tensor> values;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const auto& spec = graph->inputs[i].spec;
        if (inputs[i]->dtype() != spec.dtype || inputs[i]->shape() != spec.shape)
            return makeError(ErrorCode::ShapeMismatch,
                             "input " + std::to_string(i) + " does not match the graph's declaration");
        values.push_back(*inputs[i]);
    }
    const auto start = std::chrono::steady_clock::now();
    auto outputs = compute::reference::runGraph(*graph, *plan, values);
    if (!outputs)
        return tl::unexpected(outputs.error());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return GraphTaskResult{std::move(*outputs), "cpu-reference", seconds};
}

} // namespace goblin::volunteer
