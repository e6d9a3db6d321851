#include "graph_task.hpp"

#include <chrono>

#include <boost/json/serialize.hpp>

#include "goblin/core/graph/graph_json.hpp"
#include "goblin/reference/graph_executor.hpp"

namespace goblin::volunteer {

GraphExecutors::GraphExecutors(std::optional<int> device,
                               std::function<void(const std::string&)> log)
    : m_deviceIndex(device), m_log(std::move(log)) {}

compute::OpenClGraphExecutor* GraphExecutors::device() {
    if (!m_deviceIndex || m_deviceFailed)
        return nullptr;
    if (!m_device) {
        auto created = compute::OpenClGraphExecutor::create(*m_deviceIndex);
        if (!created) {
            m_deviceFailed = true;
            m_log("graph tasks run on the CPU: OpenCL device gpu" + std::to_string(*m_deviceIndex) +
                  " cannot run them (" + created.error().message + ")");
            return nullptr;
        }
        m_device.emplace(std::move(*created));
    }
    return &*m_device;
}

Expected<GraphTaskResult> GraphExecutors::run(const boost::json::value& graphJson,
                                              const std::vector<net::TensorPtr>& inputs,
                                              const core::graph::GraphLimits& limits,
                                              const reference::GraphRunHooks& hooks) {
    if (!graphJson.is_object())
        return makeError(ErrorCode::InvalidMessage, "a graph task needs a 'graph' object");
    auto graph = core::graph::decodeGraph(boost::json::serialize(graphJson), limits);
    if (!graph)
        return tl::unexpected(graph.error());
    auto plan = core::graph::validateGraph(*graph, limits);
    if (!plan)
        return tl::unexpected(plan.error());
    if (inputs.size() != graph->inputs.size())
        return makeError(ErrorCode::InvalidMessage,
                         "the task's tensors do not match the graph's inputs");
    std::vector<core::Tensor> values;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const auto& spec = graph->inputs[i].spec;
        if (inputs[i]->dtype() != spec.dtype || inputs[i]->shape() != spec.shape)
            return makeError(ErrorCode::ShapeMismatch,
                             "input " + std::to_string(i) +
                                 " does not match the graph's declaration");
        values.push_back(*inputs[i]);
    }
    const auto start = std::chrono::steady_clock::now();
    auto seconds = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    bool stoppedByCaller = false;
    reference::GraphRunHooks watched;
    if (hooks.beforeNode)
        watched.beforeNode = [&](std::size_t step, std::size_t steps) {
            stoppedByCaller = stoppedByCaller || !hooks.beforeNode(step, steps);
            return !stoppedByCaller;
        };
    if (compute::OpenClGraphExecutor* executor = device()) {
        auto outputs = executor->run(*graph, *plan, values, watched);
        if (!outputs && stoppedByCaller)
            return tl::unexpected(outputs.error());
        if (outputs)
            return GraphTaskResult{std::move(*outputs), "opencl-graph", seconds()};
        const ErrorCode code = outputs.error().code;
        if (code == ErrorCode::InvalidInput || code == ErrorCode::UnsupportedDtype ||
            code == ErrorCode::ShapeMismatch)
            return tl::unexpected(outputs.error());
        m_log("graph task on gpu" + std::to_string(*m_deviceIndex) + " failed (" +
              outputs.error().message + "); computing it on the CPU");
    }
    auto outputs = reference::runGraph(*graph, *plan, values, watched);
    if (!outputs)
        return tl::unexpected(outputs.error());
    return GraphTaskResult{std::move(*outputs), "cpu-reference", seconds()};
}

} // namespace goblin::volunteer
