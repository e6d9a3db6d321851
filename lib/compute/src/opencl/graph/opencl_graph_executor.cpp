// OpenClGraphExecutor: uploads inputs and constants, runs each node's kernel (or, without one, the
// CPU reference on downloaded arguments), frees each device value after its last use, downloads
// the outputs. Errors carry the reference's codes and "node <id>: " prefix.
#include "goblin/compute/opencl_graph_executor.hpp"

#include <map>
#include <set>

#include "goblin/reference/graph_executor.hpp"
#include "opencl/graph/kernel_launch.hpp"

namespace goblin::compute {

using core::Tensor;
using core::ops::OpCode;
using opencl::DeviceValue;

struct OpenClGraphExecutor::State {
    State(opencl::GraphDevice opened, const OpenClGraphOptions& options)
        : device(std::move(opened)), programs(device),
          cpuOps(options.cpuOps.begin(), options.cpuOps.end()) {}
    opencl::GraphDevice device;
    opencl::ProgramCache programs;
    std::set<OpCode> cpuOps;
    std::set<OpCode> fellBack;
};

namespace {

bool isReduction(OpCode op) {
    return op >= OpCode::Sum && op <= OpCode::LogSoftmax;
}
bool isShapeOp(OpCode op) {
    return op >= OpCode::Cast && op <= OpCode::Matmul;
}
bool isIndexOp(OpCode op) {
    return op >= OpCode::Gather && op <= OpCode::IndexAdd;
}
bool isWindowOp(OpCode op) {
    return op >= OpCode::Conv2d && op <= OpCode::MaxPool2dBackward;
}
bool isNormOp(OpCode op) {
    return op == OpCode::LayerNorm || op == OpCode::LayerNormBackward;
}
bool isLayoutOp(OpCode op) {
    return (op >= OpCode::Concat && op <= OpCode::Pad) || op == OpCode::DropoutMask;
}

// Whether this node runs on the device: a kernel exists for the op and its dtypes, and the device
// computes those dtypes exactly as the reference (fp64; correctly rounded f32 divide/sqrt).
bool runsOnDevice(const opencl::GraphDevice& device, OpCode op, std::span<const DeviceValue> args,
                  const core::ops::TensorSpec& out) {
    if (!OpenClGraphExecutor::hasKernel(op) || !device.supports(out.dtype))
        return false;
    for (const DeviceValue& arg : args)
        if (!device.supports(arg.spec.dtype))
            return false;
    const bool boolInput = !args.empty() && args[0].spec.dtype == core::DType::Bool;
    // The reference computes no bool reductions, matmul or index_add (the catalog refuses them).
    return !(boolInput && (isReduction(op) || op == OpCode::Matmul || op == OpCode::IndexAdd));
}

Expected<DeviceValue> runOnCpu(opencl::GraphDevice& device, const core::graph::GraphNode& node,
                               std::span<const DeviceValue> args) {
    std::vector<Tensor> hostArgs;
    for (const DeviceValue& arg : args) {
        auto tensor = device.download(arg);
        if (!tensor)
            return tl::unexpected(tensor.error());
        hostArgs.push_back(std::move(*tensor));
    }
    auto result = reference::runOp(node.op, hostArgs, node.attrs);
    if (!result)
        return tl::unexpected(result.error());
    return device.upload(*result);
}

Expected<DeviceValue> launchNode(opencl::LaunchContext& launch, const core::graph::GraphNode& node,
                                 std::span<const DeviceValue> args,
                                 const core::ops::TensorSpec& out) {
    // Catalog 3 ops with an empty result run no kernel (index_add still checks its indices), as in
    // the reference.
    if (node.op >= OpCode::Gather && node.op != OpCode::IndexAdd &&
        core::elementCount(out.shape).value_or(0) == 0)
        return launch.device.allocate(out);
    if (isReduction(node.op))
        return opencl::launchReduction(launch, node.op, args, node.attrs, out);
    if (isIndexOp(node.op))
        return opencl::launchIndexOp(launch, node.op, args, node.attrs, out);
    if (isLayoutOp(node.op))
        return opencl::launchLayoutOp(launch, node.op, args, node.attrs, out);
    if (isWindowOp(node.op))
        return opencl::launchWindowOp(launch, node.op, args, node.attrs, out);
    if (isNormOp(node.op))
        return opencl::launchNormOp(launch, node.op, args, node.attrs, out);
    if (isShapeOp(node.op))
        return opencl::launchShapeOp(launch, node.op, args, node.attrs, out);
    return opencl::launchElementwise(launch, node.op, args, node.attrs, out);
}

// Inputs (checked against their declarations, as the reference does) and constants on the device.
Expected<std::map<core::graph::ValueId, DeviceValue>> uploadValues(opencl::GraphDevice& device,
                                                                   const core::graph::Graph& graph,
                                                                   std::span<const Tensor> inputs) {
    if (inputs.size() != graph.inputs.size())
        return makeError(ErrorCode::InvalidInput,
                         "graph takes " + std::to_string(graph.inputs.size()) + " inputs, got " +
                             std::to_string(inputs.size()));
    std::map<core::graph::ValueId, DeviceValue> values;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const auto& declared = graph.inputs[i].spec;
        if (inputs[i].dtype() != declared.dtype || inputs[i].shape() != declared.shape)
            return makeError(ErrorCode::ShapeMismatch,
                             "input " + std::to_string(graph.inputs[i].id) +
                                 " does not match its declared dtype and shape");
        auto uploaded = device.upload(inputs[i]);
        if (!uploaded)
            return tl::unexpected(uploaded.error());
        values[graph.inputs[i].id] = std::move(*uploaded);
    }
    for (const auto& constant : graph.constants) {
        auto uploaded = device.upload(constant.value);
        if (!uploaded)
            return tl::unexpected(uploaded.error());
        values[constant.id] = std::move(*uploaded);
    }
    return values;
}

} // namespace

bool OpenClGraphExecutor::hasKernel(OpCode op) {
    return op < OpCode::Count;
}

Expected<OpenClGraphExecutor> OpenClGraphExecutor::create(int deviceIndex,
                                                          const OpenClGraphOptions& options) {
    auto device = opencl::GraphDevice::open(deviceIndex);
    if (!device)
        return tl::unexpected(device.error());
    if (options.ignoreFp64)
        device->info.fp64 = false;
    return OpenClGraphExecutor(std::make_unique<State>(std::move(*device), options));
}

OpenClGraphExecutor::OpenClGraphExecutor(std::unique_ptr<State> state)
    : m_state(std::move(state)) {}
OpenClGraphExecutor::OpenClGraphExecutor(OpenClGraphExecutor&&) noexcept = default;
OpenClGraphExecutor& OpenClGraphExecutor::operator=(OpenClGraphExecutor&&) noexcept = default;
OpenClGraphExecutor::~OpenClGraphExecutor() = default;

std::vector<OpCode> OpenClGraphExecutor::fellBackOps() const {
    return {m_state->fellBack.begin(), m_state->fellBack.end()};
}

const OpenClDeviceInfo& OpenClGraphExecutor::device() const {
    return m_state->device.info;
}

std::size_t OpenClGraphExecutor::programBuilds() const {
    return m_state->programs.builds();
}

Expected<std::vector<Tensor>> OpenClGraphExecutor::run(const core::graph::Graph& graph,
                                                       const core::graph::GraphPlan& plan,
                                                       std::span<const Tensor> inputs,
                                                       const reference::GraphRunHooks& hooks) {
    opencl::GraphDevice& device = m_state->device;
    auto uploaded = uploadValues(device, graph, inputs);
    if (!uploaded)
        return tl::unexpected(uploaded.error());
    std::map<core::graph::ValueId, DeviceValue>& values = *uploaded;
    // The kernels' runtime error flag (one cl_int, written by atomic_or).
    auto flag = device.allocate({core::DType::I32, {1}});
    if (!flag)
        return tl::unexpected(flag.error());
    opencl::LaunchContext launch{device, m_state->programs, flag->buffer};
    if (auto cleared = opencl::clearErrorFlag(launch); !cleared)
        return tl::unexpected(cleared.error());
    const auto last = reference::lastUses(graph, plan);
    for (std::size_t step = 0; step < plan.order.size(); ++step) {
        // Kernels are queued per node and small, so stopping here holds within about one node.
        if (hooks.beforeNode && !hooks.beforeNode(step, plan.order.size()))
            return makeError(ErrorCode::Internal, "stopped before node " + std::to_string(step));
        const auto& node = graph.nodes[plan.order[step]];
        std::vector<DeviceValue> args;
        for (auto arg : node.args)
            args.push_back(values.at(arg));
        const auto& spec = plan.specs.at(node.id);
        const bool onDevice =
            !m_state->cpuOps.contains(node.op) && runsOnDevice(device, node.op, args, spec);
        if (!onDevice)
            m_state->fellBack.insert(node.op);
        auto result =
            onDevice ? launchNode(launch, node, args, spec) : runOnCpu(device, node, args);
        if (!result)
            return makeError(result.error().code,
                             "node " + std::to_string(node.id) + ": " + result.error().message);
        values[node.id] = std::move(*result);
        for (auto arg : node.args)
            if (last.at(arg) == step)
                values.erase(arg);
    }
    std::vector<Tensor> outputs;
    for (auto id : graph.outputs) {
        auto tensor = device.download(values.at(id));
        if (!tensor)
            return tl::unexpected(tensor.error());
        outputs.push_back(std::move(*tensor));
    }
    return outputs;
}

} // namespace goblin::compute
