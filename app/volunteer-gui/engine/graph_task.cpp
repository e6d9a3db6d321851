#include "graph_task.hpp"

#include <algorithm>
#include <chrono>
#include <set>

#include <boost/json/serialize.hpp>

#include "goblin/compute/blas_conv.hpp"
#include "goblin/compute/blas_matmul.hpp"
#include "goblin/core/finite_values.hpp"
#include "goblin/core/graph/graph_json.hpp"
#include "goblin/reference/graph_executor.hpp"

namespace goblin::volunteer {
namespace {

bool isGemmOp(core::ops::OpCode op) {
    using core::ops::OpCode;
    return op == OpCode::Matmul || op == OpCode::Conv2d || op == OpCode::Conv2dInputGrad ||
           op == OpCode::Conv2dWeightGrad;
}

// The task's gemm_nodes, each an f32/f64 matmul, conv2d or conv2d gradient node of the graph.
Expected<std::set<core::graph::ValueId>> gemmNodesOf(const core::graph::Graph& graph,
                                                     const core::graph::GraphPlan& plan,
                                                     const std::vector<std::int64_t>& ids) {
    std::set<core::graph::ValueId> nodes;
    for (std::int64_t id : ids) {
        const auto node = std::find_if(graph.nodes.begin(), graph.nodes.end(),
                                       [&](const auto& each) { return each.id == id; });
        const bool gemm = node != graph.nodes.end() && isGemmOp(node->op);
        const core::DType dtype = gemm ? plan.specs.at(node->id).dtype : core::DType::Bool;
        if (dtype != core::DType::F32 && dtype != core::DType::F64)
            return makeError(
                ErrorCode::InvalidMessage,
                "gemm_nodes names " + std::to_string(id) +
                    ", which is not an f32 or f64 matmul, conv2d or conv2d gradient node "
                    "of the graph");
        nodes.insert(node->id);
    }
    return nodes;
}

bool allFinite(const core::Tensor& tensor) {
    return tensor.dtype() == core::DType::F32 ? core::allFinite(tensor.values<float>())
                                              : core::allFinite(tensor.values<double>());
}

} // namespace

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
                                              const reference::GraphRunHooks& hooks,
                                              const std::vector<std::int64_t>& gemmNodes) {
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
    auto gemm = gemmNodesOf(*graph, *plan, gemmNodes);
    if (!gemm)
        return tl::unexpected(gemm.error());
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
    if (!gemm->empty())
        watched.computeNode =
            [&nodes = *gemm](
                const core::graph::GraphNode& node,
                std::span<const core::Tensor> args) -> std::optional<Expected<core::Tensor>> {
            // NaN or Inf anywhere: the canonical kernel, whose bits the node compares.
            if (!nodes.contains(node.id) || !allFinite(args[0]) || !allFinite(args[1]))
                return std::nullopt;
            auto product = node.op == core::ops::OpCode::Matmul
                               ? compute::blasMatmul(args[0], args[1])
                               : compute::blasConvolution(node.op, args[0], args[1], node.attrs);
            if (product && !allFinite(*product))
                return std::nullopt;
            return product;
        };
    auto outputs = reference::runGraph(*graph, *plan, values, watched);
    if (!outputs)
        return tl::unexpected(outputs.error());
    return GraphTaskResult{std::move(*outputs),
                           gemm->empty() ? "cpu-reference" : "cpu-reference+blas", seconds()};
}

} // namespace goblin::volunteer
