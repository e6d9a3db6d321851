// runOp and runGraph: validation through the catalog, then dispatch to the family kernels.
#include "goblin/reference/graph_executor.hpp"

#include <limits>
#include <map>
#include <optional>
#include <string>

#include "kernels.hpp"

namespace goblin::reference {

using core::Tensor;
using core::ops::OpCode;

namespace {

Expected<Tensor> runCatalog3(OpCode op, std::span<const Tensor> args,
                             const core::ops::Attributes& attrs,
                             const core::ops::TensorSpec& spec) {
    // An empty result needs no kernel, whose index arithmetic could overflow on a shape such as
    // [0, 2⁶², 2⁶²]; only index_add, whose output is x, still checks its indices.
    if (core::elementCount(spec.shape).value_or(0) == 0 && op != OpCode::IndexAdd)
        return Tensor::allocate(spec.dtype, spec.shape);
    switch (op) {
    case OpCode::Gather:
    case OpCode::IndexSelect:
    case OpCode::Embedding:
    case OpCode::OneHot:
    case OpCode::IndexAdd:
        return detail::runIndexOp(op, args, attrs, spec);
    case OpCode::Concat:
    case OpCode::Slice:
    case OpCode::Pad:
        return detail::runLayoutOp(op, args, attrs, spec);
    case OpCode::LayerNorm:
    case OpCode::LayerNormBackward:
        return detail::runNormOp(op, args, attrs, spec);
    case OpCode::Conv2d:
    case OpCode::Conv2dInputGrad:
    case OpCode::Conv2dWeightGrad:
        return detail::runConvOp(op, args, attrs, spec);
    case OpCode::DropoutMask:
        return detail::runRandomOp(op, args, attrs, spec);
    default:
        return detail::runPoolOp(op, args, attrs, spec);
    }
}

} // namespace

Expected<Tensor> runOp(OpCode op, std::span<const Tensor> args,
                       const core::ops::Attributes& attrs) {
    std::vector<core::ops::TensorSpec> specs;
    for (const Tensor& arg : args)
        specs.push_back({arg.dtype(), arg.shape()});
    auto spec = core::ops::inferOutput(op, specs, attrs);
    if (!spec)
        return tl::unexpected(spec.error());
    if (op >= OpCode::Gather)
        return runCatalog3(op, args, attrs, *spec);
    if (op >= OpCode::Sum && op <= OpCode::LogSoftmax)
        return detail::runReduction(op, args, attrs, *spec);
    if (op >= OpCode::Cast)
        return detail::runShapeOp(op, args, attrs, *spec);
    return detail::runElementwise(op, args, attrs, *spec);
}

std::map<core::graph::ValueId, std::size_t> lastUses(const core::graph::Graph& graph,
                                                     const core::graph::GraphPlan& plan) {
    std::map<core::graph::ValueId, std::size_t> last;
    for (std::size_t step = 0; step < plan.order.size(); ++step)
        for (auto arg : graph.nodes[plan.order[step]].args)
            last[arg] = step;
    for (auto id : graph.outputs)
        last[id] = std::numeric_limits<std::size_t>::max();
    return last;
}

Expected<std::vector<Tensor>> runGraph(const core::graph::Graph& graph,
                                       const core::graph::GraphPlan& plan,
                                       std::span<const Tensor> inputs, const GraphRunHooks& hooks) {
    if (inputs.size() != graph.inputs.size())
        return makeError(ErrorCode::InvalidInput,
                         "graph takes " + std::to_string(graph.inputs.size()) + " inputs, got " +
                             std::to_string(inputs.size()));
    std::map<core::graph::ValueId, Tensor> values;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const auto& declared = graph.inputs[i].spec;
        if (inputs[i].dtype() != declared.dtype || inputs[i].shape() != declared.shape)
            return makeError(ErrorCode::ShapeMismatch,
                             "input " + std::to_string(graph.inputs[i].id) +
                                 " does not match its declared dtype and shape");
        values[graph.inputs[i].id] = inputs[i];
    }
    for (const auto& constant : graph.constants)
        values[constant.id] = constant.value;
    const auto last = lastUses(graph, plan);
    for (std::size_t step = 0; step < plan.order.size(); ++step) {
        if (hooks.beforeNode && !hooks.beforeNode(step, plan.order.size()))
            return makeError(ErrorCode::Internal, "stopped before node " + std::to_string(step));
        const auto& node = graph.nodes[plan.order[step]];
        std::vector<Tensor> args;
        for (auto arg : node.args)
            args.push_back(values.at(arg));
        std::optional<Expected<Tensor>> computed;
        if (hooks.computeNode)
            computed = hooks.computeNode(node, args);
        auto result = computed ? std::move(*computed) : runOp(node.op, args, node.attrs);
        if (!result)
            return makeError(result.error().code,
                             "node " + std::to_string(node.id) + ": " + result.error().message);
        values[node.id] = std::move(*result);
        for (auto arg : node.args)
            if (last.at(arg) == step)
                values.erase(arg);
    }
    std::vector<Tensor> outputs;
    for (auto id : graph.outputs)
        outputs.push_back(values.at(id));
    return outputs;
}

} // namespace goblin::reference
