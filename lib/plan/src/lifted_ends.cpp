#include "goblin/plan/lifted_ends.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <variant>

namespace goblin::plan {
namespace {

using core::graph::GraphNode;
using core::graph::ValueId;
using core::ops::OpCode;

std::int64_t intAttr(const GraphNode& node, const char* name) {
    const auto found = node.attrs.find(name);
    if (found == node.attrs.end() || !std::holds_alternative<std::int64_t>(found->second))
        return -1;
    return std::get<std::int64_t>(found->second);
}

// The slice's [start, end) along its dim when it is a plain contiguous one within the shape.
std::optional<LiftedSource> contiguousSlice(const GraphNode& node, std::size_t input,
                                            const core::Shape& shape) {
    std::int64_t dim = intAttr(node, "dim");
    if (const auto found = node.attrs.find("dim");
        found != node.attrs.end() && std::holds_alternative<std::int64_t>(found->second) &&
        std::get<std::int64_t>(found->second) < 0)
        dim = std::get<std::int64_t>(found->second) + static_cast<std::int64_t>(shape.size());
    const std::int64_t start = intAttr(node, "start");
    const std::int64_t end = intAttr(node, "end");
    if (node.op != OpCode::Slice || intAttr(node, "step") != 1 || dim < 0 ||
        dim >= static_cast<std::int64_t>(shape.size()) || start < 0 || end < start ||
        end > shape[static_cast<std::size_t>(dim)])
        return std::nullopt;
    return LiftedSource{input, true, static_cast<int>(dim), start, end};
}

// A concat's dim, made non-negative with the rank of its value.
std::int64_t concatDim(const GraphNode& node, const core::graph::GraphPlan& plan) {
    const auto found = node.attrs.find("dim");
    std::int64_t dim =
        found != node.attrs.end() && std::holds_alternative<std::int64_t>(found->second)
            ? std::get<std::int64_t>(found->second)
            : 0;
    if (dim < 0)
        dim += static_cast<std::int64_t>(plan.specs.at(node.id).shape.size());
    return dim;
}

// The parts of an output concat: its args, an arg that is itself a concat along the same dim
// read by nothing else replaced by its own parts (captured programs nest them); `inner` gets
// the nested concats.
std::vector<ValueId> concatParts(const GraphNode& node, const core::graph::GraphPlan& plan,
                                 const std::map<ValueId, const GraphNode*>& producer,
                                 std::map<ValueId, std::vector<const GraphNode*>>& readers,
                                 const std::set<ValueId>& outputs, std::vector<ValueId>& inner) {
    std::vector<ValueId> parts;
    for (ValueId arg : node.args) {
        const auto made = producer.find(arg);
        if (made != producer.end() && made->second->op == OpCode::Concat &&
            concatDim(*made->second, plan) == concatDim(node, plan) && readers[arg].size() == 1 &&
            !outputs.contains(arg)) {
            inner.push_back(arg);
            for (ValueId part : concatParts(*made->second, plan, producer, readers, outputs, inner))
                parts.push_back(part);
            continue;
        }
        parts.push_back(arg);
    }
    return parts;
}

} // namespace

LiftedEnds liftEnds(const core::graph::Graph& graph, const core::graph::GraphPlan& plan) {
    const std::set<ValueId> outputs(graph.outputs.begin(), graph.outputs.end());
    std::map<ValueId, std::vector<const GraphNode*>> readers;
    for (const GraphNode& node : graph.nodes)
        for (ValueId arg : node.args)
            readers[arg].push_back(&node);

    LiftedEnds lifted;
    lifted.graph.catalogVersion = graph.catalogVersion;
    lifted.graph.constants = graph.constants;
    std::set<ValueId> removed; // slice nodes that became inputs, concat nodes split into parts
    for (std::size_t i = 0; i < graph.inputs.size(); ++i) {
        const auto& input = graph.inputs[i];
        const auto& read = readers[input.id];
        std::vector<LiftedSource> slices;
        for (const GraphNode* node : read) {
            auto slice = contiguousSlice(*node, i, input.spec.shape);
            if (!slice || outputs.contains(node->id) || readers[node->id].empty())
                break;
            slices.push_back(*slice);
        }
        if (read.empty() || outputs.contains(input.id) || slices.size() != read.size()) {
            lifted.graph.inputs.push_back(input);
            lifted.inputs.push_back(LiftedSource{i, false, 0, 0, 0});
            continue;
        }
        for (std::size_t s = 0; s < read.size(); ++s) {
            lifted.graph.inputs.push_back({read[s]->id, plan.specs.at(read[s]->id)});
            lifted.inputs.push_back(slices[s]);
            removed.insert(read[s]->id);
        }
    }
    std::map<ValueId, const GraphNode*> producer;
    for (const GraphNode& node : graph.nodes)
        if (!removed.contains(node.id))
            producer.emplace(node.id, &node);
    std::set<ValueId> parted; // values that are a part of a lifted output
    for (std::size_t o = 0; o < graph.outputs.size(); ++o) {
        const ValueId id = graph.outputs[o];
        const auto made = producer.find(id);
        const GraphNode* node = made == producer.end() ? nullptr : made->second;
        std::vector<ValueId> inner;
        const std::vector<ValueId> parts =
            node && node->op == OpCode::Concat
                ? concatParts(*node, plan, producer, readers, outputs, inner)
                : std::vector<ValueId>{};
        const bool liftable = parts.size() > 1 && readers[id].empty() &&
                              std::count(graph.outputs.begin(), graph.outputs.end(), id) == 1 &&
                              std::all_of(parts.begin(), parts.end(), [&](ValueId arg) {
                                  return producer.contains(arg) && !outputs.contains(arg) &&
                                         !parted.contains(arg) &&
                                         std::count(parts.begin(), parts.end(), arg) == 1;
                              });
        if (!liftable) {
            lifted.graph.outputs.push_back(id);
            lifted.outputs.push_back(LiftedOutput{o, 0});
            lifted.parts.push_back(OutputParts{});
            continue;
        }
        for (std::size_t p = 0; p < parts.size(); ++p) {
            lifted.graph.outputs.push_back(parts[p]);
            lifted.outputs.push_back(LiftedOutput{o, p});
            parted.insert(parts[p]);
        }
        lifted.parts.push_back(OutputParts{parts.size(), static_cast<int>(concatDim(*node, plan))});
        removed.insert(id);
        removed.insert(inner.begin(), inner.end());
    }
    for (const GraphNode& node : graph.nodes)
        if (!removed.contains(node.id))
            lifted.graph.nodes.push_back(node);
    lifted.changed = !removed.empty();
    return lifted;
}

} // namespace goblin::plan
