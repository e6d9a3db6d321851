#include "goblin/plan/stage_cut.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

namespace goblin::plan {
namespace {

using core::graph::Graph;
using core::graph::GraphPlan;
using core::graph::ValueId;

std::int64_t specBytes(const core::ops::TensorSpec& spec) {
    return static_cast<std::int64_t>(core::byteSize(spec.dtype, spec.shape).value_or(0));
}

// The graph's values densely numbered: what a cut needs to know of each.
struct ValueTable {
    std::unordered_map<ValueId, std::size_t> index;
    std::vector<std::int64_t> bytes;
    std::vector<std::int64_t> producedAt; // position in the order; -1 for inputs and constants
    std::vector<std::int64_t> lastUse;    // last position that reads it; -1 when none does

    std::size_t add(ValueId id, std::int64_t size, std::int64_t position) {
        index.emplace(id, bytes.size());
        bytes.push_back(size);
        producedAt.push_back(position);
        lastUse.push_back(-1);
        return bytes.size() - 1;
    }
};

ValueTable tableOf(const Graph& graph, const GraphPlan& plan) {
    ValueTable table;
    for (const auto& input : graph.inputs)
        table.add(input.id, specBytes(input.spec), -1);
    for (const auto& constant : graph.constants)
        table.add(constant.id, static_cast<std::int64_t>(constant.value.byteSize()), -1);
    for (std::size_t p = 0; p < plan.order.size(); ++p) {
        const auto& node = graph.nodes[plan.order[p]];
        table.add(node.id, specBytes(plan.specs.at(node.id)), static_cast<std::int64_t>(p));
    }
    for (std::size_t p = 0; p < plan.order.size(); ++p)
        for (ValueId arg : graph.nodes[plan.order[p]].args)
            table.lastUse[table.index.at(arg)] = static_cast<std::int64_t>(p);
    return table;
}

// For each start position, the end (exclusive) of the longest stage from it within the budget.
std::vector<std::size_t> longestStages(const Graph& graph, const GraphPlan& plan,
                                       const ValueTable& table, std::int64_t budget) {
    const std::size_t n = plan.order.size();
    std::vector<std::size_t> ends(n, 0);
    std::vector<std::size_t> seen(table.bytes.size(), std::numeric_limits<std::size_t>::max());
    for (std::size_t a = 0; a < n; ++a) {
        std::int64_t held = 0;
        std::size_t b = a;
        for (; b < n; ++b) {
            const auto& node = graph.nodes[plan.order[b]];
            std::int64_t more = table.bytes[table.index.at(node.id)];
            std::vector<std::size_t> outside;
            for (ValueId arg : node.args) {
                const std::size_t v = table.index.at(arg);
                if (table.producedAt[v] < static_cast<std::int64_t>(a) && seen[v] != a &&
                    std::find(outside.begin(), outside.end(), v) == outside.end()) {
                    outside.push_back(v);
                    more += table.bytes[v];
                }
            }
            if (held + more > budget)
                break;
            held += more;
            for (std::size_t v : outside)
                seen[v] = a;
        }
        ends[a] = b;
    }
    return ends;
}

// Bytes crossing the cut before each position: node values made before it and read at or after.
std::vector<std::int64_t> crossingBytes(const ValueTable& table, std::size_t n) {
    std::vector<std::int64_t> delta(n + 1, 0);
    for (std::size_t v = 0; v < table.bytes.size(); ++v) {
        const std::int64_t made = table.producedAt[v];
        const std::int64_t last = table.lastUse[v];
        if (made < 0 || last <= made)
            continue;
        delta[static_cast<std::size_t>(made) + 1] += table.bytes[v];
        delta[static_cast<std::size_t>(last) + 1] -= table.bytes[v];
    }
    std::vector<std::int64_t> crossing(n + 1, 0);
    std::int64_t running = 0;
    for (std::size_t k = 0; k <= n; ++k) {
        running += delta[k];
        crossing[k] = running;
    }
    return crossing;
}

// The cut positions (each stage's start, then n) with the fewest stages, then the fewest bytes
// crossing its cuts, then the lightest heaviest stage (`costBefore[k]`: the cost of the nodes
// before position k). Needs `ends[a] > a` for every a (each node fits alone). Each criterion of
// a prefix only grows with the prefix's own, so the best prefix to each position is enough.
std::vector<std::size_t> bestCuts(const std::vector<std::size_t>& ends,
                                  const std::vector<std::int64_t>& crossing,
                                  const std::vector<double>& costBefore, std::size_t n) {
    struct Best {
        std::int64_t stages = std::numeric_limits<std::int64_t>::max();
        std::int64_t crossed = 0;
        double heaviest = 0;
        std::size_t from = 0;

        bool operator<(const Best& other) const {
            return std::tie(stages, crossed, heaviest) <
                   std::tie(other.stages, other.crossed, other.heaviest);
        }
    };
    std::vector<Best> best(n + 1);
    best[0] = Best{0, 0, 0, 0};
    for (std::size_t a = 0; a < n; ++a) {
        if (best[a].stages == std::numeric_limits<std::int64_t>::max())
            continue;
        const std::int64_t crossed = best[a].crossed + (a > 0 ? crossing[a] : 0);
        for (std::size_t b = a + 1; b <= ends[a]; ++b) {
            const Best candidate{best[a].stages + 1, crossed,
                                 std::max(best[a].heaviest, costBefore[b] - costBefore[a]), a};
            if (candidate < best[b])
                best[b] = candidate;
        }
    }
    std::vector<std::size_t> cuts{n};
    for (std::size_t at = n; at > 0; at = best[at].from)
        cuts.push_back(best[at].from);
    std::reverse(cuts.begin(), cuts.end());
    return cuts;
}

} // namespace

std::int64_t graphValueBytes(const GraphPlan& plan) {
    std::int64_t total = 0;
    for (const auto& [id, spec] : plan.specs)
        total += specBytes(spec);
    return total;
}

Expected<StageCut> cutIntoStages(const Graph& graph, const GraphPlan& plan,
                                 std::int64_t budgetBytes, const std::vector<double>& nodeCosts) {
    const ValueTable table = tableOf(graph, plan);
    const std::size_t n = plan.order.size();
    if (!nodeCosts.empty() && nodeCosts.size() != n)
        return makeError(ErrorCode::InvalidInput, "the node costs are not one per node");
    std::vector<double> costBefore(n + 1, 0.0);
    for (std::size_t p = 0; p < n && !nodeCosts.empty(); ++p)
        costBefore[p + 1] = costBefore[p] + nodeCosts[p];
    for (ValueId output : graph.outputs)
        if (table.producedAt[table.index.at(output)] < 0)
            return makeError(ErrorCode::InvalidInput,
                             "an output of the graph is an input or a constant: no stage makes it");
    const std::vector<std::size_t> ends = longestStages(graph, plan, table, budgetBytes);
    for (std::size_t a = 0; a < n; ++a) {
        if (ends[a] > a)
            continue;
        // A stage holding this node holds at least what it holds alone.
        const auto& node = graph.nodes[plan.order[a]];
        std::int64_t alone = table.bytes[table.index.at(node.id)];
        std::vector<ValueId> args = node.args;
        std::sort(args.begin(), args.end());
        args.erase(std::unique(args.begin(), args.end()), args.end());
        for (ValueId arg : args)
            alone += table.bytes[table.index.at(arg)];
        return makeError(ErrorCode::LimitExceeded,
                         "its node " + std::to_string(node.id) + " (" +
                             std::string(core::ops::opInfo(node.op).name) + ") alone holds " +
                             std::to_string(alone) + " bytes with what it reads");
    }
    const std::vector<std::size_t> cuts = bestCuts(ends, crossingBytes(table, n), costBefore, n);
    std::map<ValueId, std::size_t> graphInputIndex;
    for (std::size_t i = 0; i < graph.inputs.size(); ++i)
        graphInputIndex.emplace(graph.inputs[i].id, i);
    std::map<ValueId, const core::graph::GraphConstant*> constants;
    for (const auto& constant : graph.constants)
        constants.emplace(constant.id, &constant);

    StageCut cut;
    cut.outputs.resize(graph.outputs.size());
    std::map<ValueId, OutputPlace> handedOn; // boundary values, where their stage outputs them
    for (std::size_t s = 0; s + 1 < cuts.size(); ++s) {
        const auto a = static_cast<std::int64_t>(cuts[s]);
        const auto b = static_cast<std::int64_t>(cuts[s + 1]);
        GraphStage stage;
        stage.graph.catalogVersion = graph.catalogVersion;
        std::map<ValueId, bool> taken; // values given to the stage (inputs and constants)
        for (std::int64_t p = a; p < b; ++p) {
            const auto& node = graph.nodes[plan.order[static_cast<std::size_t>(p)]];
            for (ValueId arg : node.args) {
                const std::size_t v = table.index.at(arg);
                if (table.producedAt[v] >= a || taken.contains(arg))
                    continue;
                taken.emplace(arg, true);
                stage.bytes += table.bytes[v];
                if (auto constant = constants.find(arg); constant != constants.end()) {
                    stage.graph.constants.push_back(*constant->second);
                    continue;
                }
                stage.graph.inputs.push_back({arg, plan.specs.at(arg)});
                if (auto input = graphInputIndex.find(arg); input != graphInputIndex.end())
                    stage.sources.push_back({StageSource::Kind::GraphInput, input->second, 0, 0});
                else
                    stage.sources.push_back({StageSource::Kind::Boundary, 0, handedOn.at(arg).stage,
                                             handedOn.at(arg).output});
            }
            stage.graph.nodes.push_back(node);
            stage.bytes += table.bytes[table.index.at(node.id)];
        }
        const auto madeHere = [&](ValueId id) {
            const std::int64_t made = table.producedAt[table.index.at(id)];
            return made >= a && made < b;
        };
        for (std::size_t o = 0; o < graph.outputs.size(); ++o)
            if (madeHere(graph.outputs[o])) {
                cut.outputs[o] = OutputPlace{cut.stages.size(), stage.graph.outputs.size()};
                stage.graph.outputs.push_back(graph.outputs[o]);
            }
        stage.researcherOutputs = stage.graph.outputs.size();
        for (std::int64_t p = a; p < b; ++p) {
            const ValueId id = graph.nodes[plan.order[static_cast<std::size_t>(p)]].id;
            if (table.lastUse[table.index.at(id)] >= b) {
                handedOn[id] = OutputPlace{cut.stages.size(), stage.graph.outputs.size()};
                stage.graph.outputs.push_back(id);
                cut.boundaryBytes += table.bytes[table.index.at(id)];
            }
        }
        if (stage.graph.outputs.empty())
            continue; // only values nothing reads: no task needs to compute them
        cut.stages.push_back(std::move(stage));
    }
    return cut;
}

} // namespace goblin::plan
