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

// Whether a slice is plain and contiguous within the shape (the only lift of LiftRules{false}).
bool contiguousSlice(const GraphNode& node, const core::Shape& shape) {
    std::int64_t dim = intAttr(node, "dim");
    if (const auto found = node.attrs.find("dim");
        found != node.attrs.end() && std::holds_alternative<std::int64_t>(found->second) &&
        std::get<std::int64_t>(found->second) < 0)
        dim = std::get<std::int64_t>(found->second) + static_cast<std::int64_t>(shape.size());
    const std::int64_t start = intAttr(node, "start");
    const std::int64_t end = intAttr(node, "end");
    return node.op == OpCode::Slice && intAttr(node, "step") == 1 && dim >= 0 &&
           dim < static_cast<std::int64_t>(shape.size()) && start >= 0 && end >= start &&
           end <= shape[static_cast<std::size_t>(dim)];
}

bool isView(const GraphNode& node) {
    return node.args.size() == 1 &&
           (node.op == OpCode::Slice || node.op == OpCode::Reshape || node.op == OpCode::Permute);
}

// A value the node makes for the lifted graph: under its own id, by `steps` from the input.
struct LiftPoint {
    ValueId id = 0;
    std::vector<ViewStep> steps;
};

// The lift points of one input, and the view nodes they replace.
struct InputLift {
    std::vector<LiftPoint> points;
    std::set<ValueId> removed;
};

// Lifting through views (LiftRules::throughViews). The view nodes that read a value form a tree
// (views read one value); a value on it becomes a lift point where something other than a
// deeper slice reads it, once a slice is on the way to it; the input stays whole when a value
// with no slice on its way is read by anything but views leading to a slice, or when a value on
// the tree is an output or read by nothing.
class ViewLifter {
public:
    ViewLifter(const std::map<ValueId, std::vector<const GraphNode*>>& readers,
               const std::set<ValueId>& outputs)
        : m_readers(readers), m_outputs(outputs) {}

    std::optional<InputLift> lift(ValueId input) {
        InputLift result;
        if (!walk(input, {}, false, result))
            return std::nullopt;
        return result;
    }

private:
    const std::vector<const GraphNode*>& readersOf(ValueId value) const {
        static const std::vector<const GraphNode*> none;
        const auto found = m_readers.find(value);
        return found == m_readers.end() ? none : found->second;
    }

    // Whether a view node is a slice or leads through views to one.
    bool leadsToSlice(const GraphNode& node) {
        if (node.op == OpCode::Slice)
            return true;
        if (const auto known = m_leads.find(node.id); known != m_leads.end())
            return known->second;
        bool leads = false;
        for (const GraphNode* reader : readersOf(node.id))
            leads = leads || (isView(*reader) && leadsToSlice(*reader));
        m_leads[node.id] = leads;
        return leads;
    }

    bool walk(ValueId value, const std::vector<ViewStep>& steps, bool sliced, InputLift& result) {
        const auto& read = readersOf(value);
        if (m_outputs.contains(value) || read.empty())
            return false;
        std::vector<const GraphNode*> deeper;
        bool point = false;
        for (const GraphNode* reader : read) {
            if (isView(*reader) && leadsToSlice(*reader))
                deeper.push_back(reader);
            else
                point = true;
        }
        if (point && !sliced)
            return false;
        if (point)
            result.points.push_back(LiftPoint{value, steps});
        for (const GraphNode* node : deeper) {
            std::vector<ViewStep> next = steps;
            next.push_back(ViewStep{node->op, node->attrs});
            result.removed.insert(node->id);
            if (!walk(node->id, next, sliced || node->op == OpCode::Slice, result))
                return false;
        }
        return true;
    }

    const std::map<ValueId, std::vector<const GraphNode*>>& m_readers;
    const std::set<ValueId>& m_outputs;
    std::map<ValueId, bool> m_leads;
};

// The lift of an input that only plain contiguous slices read, each read by something and none
// an output (LiftRules{false}).
std::optional<InputLift> sliceLift(const core::graph::GraphInput& input,
                                   const std::map<ValueId, std::vector<const GraphNode*>>& readers,
                                   const std::set<ValueId>& outputs) {
    const auto found = readers.find(input.id);
    if (found == readers.end() || found->second.empty() || outputs.contains(input.id))
        return std::nullopt;
    InputLift result;
    for (const GraphNode* node : found->second) {
        const auto read = readers.find(node->id);
        if (!contiguousSlice(*node, input.spec.shape) || outputs.contains(node->id) ||
            read == readers.end() || read->second.empty())
            return std::nullopt;
        result.points.push_back(LiftPoint{node->id, {ViewStep{node->op, node->attrs}}});
        result.removed.insert(node->id);
    }
    return result;
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

LiftedEnds liftEnds(const core::graph::Graph& graph, const core::graph::GraphPlan& plan,
                    const LiftRules& rules) {
    const std::set<ValueId> outputs(graph.outputs.begin(), graph.outputs.end());
    std::map<ValueId, std::vector<const GraphNode*>> readers;
    for (const GraphNode& node : graph.nodes)
        for (ValueId arg : node.args)
            readers[arg].push_back(&node);

    LiftedEnds lifted;
    lifted.graph.catalogVersion = graph.catalogVersion;
    lifted.graph.constants = graph.constants;
    std::set<ValueId> removed; // view nodes that became inputs, concat nodes split into parts
    ViewLifter viewLifter(readers, outputs);
    for (std::size_t i = 0; i < graph.inputs.size(); ++i) {
        const auto& input = graph.inputs[i];
        const std::optional<InputLift> lift =
            rules.throughViews ? viewLifter.lift(input.id) : sliceLift(input, readers, outputs);
        if (!lift) {
            lifted.graph.inputs.push_back(input);
            lifted.inputs.push_back(LiftedSource{i, {}});
            continue;
        }
        for (const LiftPoint& point : lift->points) {
            lifted.graph.inputs.push_back({point.id, plan.specs.at(point.id)});
            lifted.inputs.push_back(LiftedSource{i, point.steps});
        }
        removed.insert(lift->removed.begin(), lift->removed.end());
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
