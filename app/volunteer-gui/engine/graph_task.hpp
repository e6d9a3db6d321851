// One graph task on the volunteer: the graph is decoded and validated completely (the volunteer
// trusts no node: unknown ops, bad shapes, cycles and oversize values are refused before anything
// runs), the inputs are checked against it, and the graph runs on the OpenCL graph executor of the
// volunteer's device when it has one, else on the CPU reference executor. Compute thread only.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "goblin/compute/opencl_graph_executor.hpp"
#include "goblin/core/error.hpp"
#include "goblin/core/graph/graph.hpp"
#include "goblin/net/message.hpp"

namespace goblin::volunteer {

struct GraphTaskResult {
    std::vector<core::Tensor> outputs;
    std::string backend; // which executor computed it: opencl-graph or cpu-reference
    double seconds = 0;
};

class GraphExecutors {
public:
    // `device`: the OpenCL device index to run graphs on (its executor is made on first use and
    // kept, so its programs are built once); nullopt runs everything on the CPU reference.
    GraphExecutors(std::optional<int> device, std::function<void(const std::string&)> log);

    // Errors of the computation itself (integer division by zero, an index out of range) are the
    // task's answer; a device failure falls back to the CPU reference for this task.
    // `gemmNodes` (the task's gemm_nodes: f32/f64 matmul, conv2d and conv2d gradient nodes the lab
    // node checks by Freivalds) run through OpenBLAS when the graph runs on the CPU (backend
    // "cpu-reference+blas"); with NaN or Inf in an operand or the value, the node runs the
    // canonical kernel, whose bits the node's check of non-finite values compares. Ids that are
    // not such nodes of the graph refuse the task.
    Expected<GraphTaskResult> run(const boost::json::value& graph,
                                  const std::vector<net::TensorPtr>& inputs,
                                  const core::graph::GraphLimits& limits,
                                  const reference::GraphRunHooks& hooks = {},
                                  const std::vector<std::int64_t>& gemmNodes = {});

private:
    compute::OpenClGraphExecutor* device();

    std::optional<int> m_deviceIndex;
    std::function<void(const std::string&)> m_log;
    std::optional<compute::OpenClGraphExecutor> m_device;
    bool m_deviceFailed = false;
};

} // namespace goblin::volunteer
