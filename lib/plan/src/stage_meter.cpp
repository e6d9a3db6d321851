#include "stage_meter.hpp"

#include <algorithm>

namespace goblin::plan::detail {

// `order`: node indices; `keptToEnd` one per node of graph.nodes, or empty.
ValueTable tableOf(const Graph& graph, const GraphPlan& plan, const std::vector<std::size_t>& order,
                   StageMeasure measure, const std::vector<bool>& keptToEnd) {
    ValueTable table;
    for (const auto& input : graph.inputs)
        table.add(input.id, specBytes(input.spec), -1);
    for (const auto& constant : graph.constants)
        table.constant[table.add(constant.id, static_cast<std::int64_t>(constant.value.byteSize()),
                                 -1)] = true;
    for (std::size_t p = 0; p < order.size(); ++p) {
        const auto& node = graph.nodes[order[p]];
        table.add(node.id, specBytes(plan.specs.at(node.id)), static_cast<std::int64_t>(p));
    }
    for (std::size_t p = 0; p < order.size(); ++p)
        for (ValueId arg : graph.nodes[order[p]].args)
            table.lastUse[table.index.at(arg)] = static_cast<std::int64_t>(p);
    table.freedAfter.resize(order.size());
    table.lastReadAt.resize(order.size());
    for (std::size_t v = 0; v < table.bytes.size(); ++v)
        if (table.lastUse[v] >= 0)
            table.lastReadAt[static_cast<std::size_t>(table.lastUse[v])].push_back(v);
    for (ValueId output : graph.outputs)
        ++table.outputSlots[table.index.at(output)];
    if (measure != StageMeasure::HeldAtOnce)
        return table;
    // Executors drop a value after its last reader, and a reshape shares its argument's storage:
    // storage is dropped after the last reader of its value and of every reshape of it. Outputs,
    // kept values and values nothing reads stay to the end.
    const auto end = static_cast<std::int64_t>(order.size());
    std::vector<std::size_t> owner(table.bytes.size());
    std::vector<std::int64_t> heldTo(table.bytes.size(), -1);
    for (std::size_t v = 0; v < owner.size(); ++v)
        owner[v] = v;
    for (std::size_t p = 0; p < order.size(); ++p) {
        const auto& node = graph.nodes[order[p]];
        const std::size_t v = table.index.at(node.id);
        if (node.op == core::ops::OpCode::Reshape) {
            const std::size_t arg = table.index.at(node.args.front());
            owner[v] = owner[arg];
            table.newBytes[v] = 0;
            if (table.producedAt[arg] < 0)
                table.viewOf[v] = static_cast<std::int64_t>(arg);
            else if (table.viewOf[arg] >= 0)
                table.viewOf[v] = table.viewOf[arg];
        }
        const bool kept = !keptToEnd.empty() && keptToEnd[order[p]];
        const std::int64_t last = kept || table.lastUse[v] < 0 ? end : table.lastUse[v];
        heldTo[owner[v]] = std::max(heldTo[owner[v]], last);
    }
    for (ValueId output : graph.outputs)
        heldTo[owner[table.index.at(output)]] = end;
    for (std::size_t v = 0; v < owner.size(); ++v)
        if (owner[v] == v && table.producedAt[v] >= 0 && heldTo[v] < end)
            table.freedAfter[static_cast<std::size_t>(heldTo[v])].push_back(v);
    return table;
}

} // namespace goblin::plan::detail
