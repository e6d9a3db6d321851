#include "goblin/plan/matmul_tiles.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "goblin/plan/stage_cut.hpp"

namespace goblin::plan {
namespace {

using core::graph::GraphNode;
using core::graph::ValueId;
using core::ops::OpCode;

constexpr std::size_t kJoinedAtOnce = core::graph::GraphLimits{}.maxArgs;

// How one matmul is cut: along C's columns (B's) or rows (A's), into `tiles` blocks; `flattened`:
// the reshape that flattens C, replaced by the joined flat blocks.
struct Tiling {
    bool rows = false;
    std::int64_t tiles = 0;
    const GraphNode* flattened = nullptr;
};

std::int64_t rankOf(const core::graph::GraphPlan& plan, ValueId id) {
    return static_cast<std::int64_t>(plan.specs.at(id).shape.size());
}

// The fewest blocks of `extent` that keep fixed + varying / blocks within `target`; 0: none do.
std::int64_t fewestBlocks(std::int64_t fixed, std::int64_t varying, std::int64_t extent,
                          std::int64_t target) {
    if (fixed >= target)
        return 0;
    const std::int64_t room = target - fixed;
    const std::int64_t blocks = std::max<std::int64_t>(2, (varying + room - 1) / room);
    return blocks <= extent ? blocks : 0;
}

std::optional<Tiling> tilingOf(const GraphNode& node, const core::graph::GraphPlan& plan,
                               std::int64_t budget,
                               const std::map<ValueId, std::vector<const GraphNode*>>& readers,
                               const std::set<ValueId>& outputs) {
    if (node.op != OpCode::Matmul || node.args.size() != 2 || node.args[0] == node.args[1] ||
        rankOf(plan, node.args[0]) < 2 || rankOf(plan, node.args[1]) < 2)
        return std::nullopt;
    const auto& a = plan.specs.at(node.args[0]);
    const auto& b = plan.specs.at(node.args[1]);
    const auto& c = plan.specs.at(node.id);
    const std::int64_t aBytes = specBytes(a), bBytes = specBytes(b), cBytes = specBytes(c);
    if (aBytes + bBytes + cBytes <= budget)
        return std::nullopt;
    const std::int64_t target = budget / 2;
    Tiling tiling;
    const auto read = readers.find(node.id);
    if (read != readers.end() && read->second.size() == 1 && !outputs.contains(node.id) &&
        c.shape.size() == 2 && read->second[0]->op == OpCode::Reshape &&
        plan.specs.at(read->second[0]->id).shape.size() == 1)
        tiling.flattened = read->second[0];
    const std::int64_t byRows =
        fewestBlocks(bBytes, aBytes + cBytes, a.shape[a.shape.size() - 2], target);
    const std::int64_t byColumns = fewestBlocks(aBytes, bBytes + cBytes, b.shape.back(), target);
    if (tiling.flattened) {
        tiling.rows = true;
        tiling.tiles = byRows;
    } else if (2 * cBytes > budget) { // the concat that joins C could not run in a task
        return std::nullopt;
    } else {
        tiling.rows = byColumns == 0 || (byRows != 0 && byRows < byColumns);
        tiling.tiles = tiling.rows ? byRows : byColumns;
    }
    if (tiling.tiles == 0)
        return std::nullopt;
    return tiling;
}

GraphNode sliceNode(ValueId id, ValueId of, std::int64_t dim, std::int64_t start,
                    std::int64_t end) {
    return GraphNode{id,
                     OpCode::Slice,
                     {of},
                     {{"dim", dim}, {"start", start}, {"end", end}, {"step", std::int64_t{1}}}};
}

// The tiles of one matmul, appended to `nodes`: a slice and a product per block (flattened where
// the tiling says so), then the concat that joins them under the replaced value's id.
void appendTiles(std::vector<GraphNode>& nodes, const GraphNode& node, const Tiling& tiling,
                 const core::graph::GraphPlan& plan, ValueId& next) {
    const std::size_t cut = tiling.rows ? 0 : 1;
    const ValueId operand = node.args[cut];
    const std::int64_t rank = rankOf(plan, operand);
    const std::int64_t dim = tiling.rows ? rank - 2 : rank - 1;
    const std::int64_t extent = plan.specs.at(operand).shape[static_cast<std::size_t>(dim)];
    const std::int64_t columns = plan.specs.at(node.id).shape.back();
    const std::int64_t block = (extent + tiling.tiles - 1) / tiling.tiles;
    std::vector<ValueId> parts;
    for (std::int64_t start = 0; start < extent; start += block) {
        const std::int64_t end = std::min(extent, start + block);
        const ValueId slice = next++;
        nodes.push_back(sliceNode(slice, operand, dim, start, end));
        GraphNode product{next++, OpCode::Matmul, node.args, node.attrs};
        product.args[cut] = slice;
        nodes.push_back(product);
        if (tiling.flattened) {
            const core::ops::IntList flat{(end - start) * columns};
            nodes.push_back(GraphNode{next++, OpCode::Reshape, {product.id}, {{"shape", flat}}});
        }
        parts.push_back(nodes.back().id);
    }
    const std::int64_t joinDim =
        tiling.flattened ? 0
                         : (tiling.rows ? rankOf(plan, node.id) - 2 : rankOf(plan, node.id) - 1);
    // A node takes at most kJoinedAtOnce args (GraphLimits::maxArgs): more parts are joined in a
    // tree of concats, which copy elements as one concat would.
    while (parts.size() > kJoinedAtOnce) {
        std::vector<ValueId> joined;
        for (std::size_t first = 0; first < parts.size(); first += kJoinedAtOnce) {
            const std::size_t last = std::min(parts.size(), first + kJoinedAtOnce);
            if (last - first == 1) {
                joined.push_back(parts[first]);
                continue;
            }
            nodes.push_back(
                GraphNode{next++,
                          OpCode::Concat,
                          std::vector<ValueId>(parts.begin() + static_cast<std::ptrdiff_t>(first),
                                               parts.begin() + static_cast<std::ptrdiff_t>(last)),
                          {{"dim", joinDim}}});
            joined.push_back(nodes.back().id);
        }
        parts = std::move(joined);
    }
    nodes.push_back(GraphNode{tiling.flattened ? tiling.flattened->id : node.id,
                              OpCode::Concat,
                              parts,
                              {{"dim", joinDim}}});
}

ValueId largestId(const core::graph::Graph& graph) {
    ValueId largest = 0;
    for (const auto& input : graph.inputs)
        largest = std::max(largest, input.id);
    for (const auto& constant : graph.constants)
        largest = std::max(largest, constant.id);
    for (const GraphNode& node : graph.nodes)
        largest = std::max(largest, node.id);
    return largest;
}

} // namespace

TiledGraph tileWideMatmuls(const core::graph::Graph& graph, const core::graph::GraphPlan& plan,
                           std::int64_t budgetBytes) {
    TiledGraph tiled;
    tiled.graph.catalogVersion = graph.catalogVersion;
    tiled.graph.inputs = graph.inputs;
    tiled.graph.constants = graph.constants;
    tiled.graph.outputs = graph.outputs;
    if (budgetBytes <= 0) {
        tiled.graph = graph;
        return tiled;
    }
    const std::set<ValueId> outputs(graph.outputs.begin(), graph.outputs.end());
    std::map<ValueId, std::vector<const GraphNode*>> readers;
    for (const GraphNode& node : graph.nodes)
        for (ValueId arg : node.args)
            readers[arg].push_back(&node);
    ValueId next = largestId(graph) + 1;
    std::set<ValueId> joined; // flattening reshapes the tiles replaced
    for (const GraphNode& node : graph.nodes) {
        if (joined.contains(node.id))
            continue;
        const auto tiling = tilingOf(node, plan, budgetBytes, readers, outputs);
        if (!tiling) {
            tiled.graph.nodes.push_back(node);
            continue;
        }
        appendTiles(tiled.graph.nodes, node, *tiling, plan, next);
        if (tiling->flattened)
            joined.insert(tiling->flattened->id);
        ++tiled.tiledNodes;
    }
    return tiled;
}

} // namespace goblin::plan
