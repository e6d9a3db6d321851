#include "goblin/plan/stage_cut.hpp"

#include "goblin/plan/cut_order.hpp"

#include "stage_meter.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace goblin::plan {
namespace {

using core::graph::Graph;
using core::graph::GraphPlan;
using core::graph::ValueId;
using detail::OutputCounter;
using detail::StageMeter;
using detail::tableOf;
using detail::ValueTable;

// For each start position, the end (exclusive) of the longest stage from it within the budget.
std::vector<std::size_t> longestStages(const Graph& graph, const std::vector<std::size_t>& order,
                                       const ValueTable& table, const CutRules& rules,
                                       std::int64_t budget) {
    const std::size_t n = order.size();
    std::vector<std::size_t> ends(n, 0);
    for (std::size_t a = 0; a < n; ++a) {
        // What a stage holds only grows as it takes more nodes.
        StageMeter meter(graph, order, table, rules.measure, a);
        std::size_t b = a;
        while (b < n && meter.take(b) <= budget && meter.countsWithin(rules))
            ++b;
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
        if (made < 0 || last <= made || table.viewOf[v] >= 0)
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
// before position k), among the stages that output at most `maxOutputs` values (0: any number).
// Needs `ends[a] > a` for every a (each node fits alone). Each criterion of a prefix only grows
// with the prefix's own, so the best prefix to each position is enough. Fails when no cut keeps
// every stage's outputs within `maxOutputs`.
Expected<std::vector<std::size_t>>
bestCuts(const std::vector<std::size_t>& ends, const std::vector<std::int64_t>& crossing,
         const std::vector<double>& costBefore, const ValueTable& table,
         const std::vector<std::size_t>& valueAt, std::size_t maxOutputs) {
    const std::size_t n = ends.size();
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
    OutputCounter outputs(table);
    for (std::size_t a = 0; a < n; ++a) {
        if (best[a].stages == std::numeric_limits<std::int64_t>::max())
            continue;
        const std::int64_t crossed = best[a].crossed + (a > 0 ? crossing[a] : 0);
        outputs.start(a);
        for (std::size_t b = a + 1; b <= ends[a]; ++b) {
            if (outputs.take(b - 1, valueAt[b - 1]) > maxOutputs && maxOutputs > 0)
                continue; // a longer stage may hand on fewer
            const Best candidate{best[a].stages + 1, crossed,
                                 std::max(best[a].heaviest, costBefore[b] - costBefore[a]), a};
            if (candidate < best[b])
                best[b] = candidate;
        }
    }
    if (best[n].stages == std::numeric_limits<std::int64_t>::max())
        return makeError(ErrorCode::LimitExceeded,
                         "no cut keeps each stage's outputs within " + std::to_string(maxOutputs));
    std::vector<std::size_t> cuts{n};
    for (std::size_t at = n; at > 0; at = best[at].from)
        cuts.push_back(best[at].from);
    std::reverse(cuts.begin(), cuts.end());
    return cuts;
}

// Makes the stages of a cut, one after another: each stage's graph, its sources and outputs.
class StageMaker {
public:
    StageMaker(const Graph& graph, const GraphPlan& plan, const std::vector<std::size_t>& order,
               const ValueTable& table, StageMeasure measure)
        : m_graph(graph), m_plan(plan), m_order(order), m_table(table), m_measure(measure),
          m_outputs(graph.outputs.begin(), graph.outputs.end()) {
        for (std::size_t i = 0; i < graph.inputs.size(); ++i)
            m_inputIndex.emplace(graph.inputs[i].id, i);
        for (const auto& constant : graph.constants)
            m_constants.emplace(constant.id, &constant);
        for (std::size_t i = 0; i < graph.nodes.size(); ++i)
            m_producer.emplace(graph.nodes[i].id, i);
    }

    // Appends the stage of positions [a, b) to `cut`, unless nothing reads what it computes.
    void add(std::size_t a, std::size_t b, StageCut& cut) {
        m_stage = GraphStage{};
        m_stage.graph.catalogVersion = m_graph.catalogVersion;
        m_present.clear();
        m_a = static_cast<std::int64_t>(a);
        StageMeter meter(m_graph, m_order, m_table, m_measure, a);
        for (std::size_t p = a; p < b; ++p) {
            const auto& node = m_graph.nodes[m_order[p]];
            m_stage.bytes = meter.take(p);
            if (m_table.viewOf[m_table.index.at(node.id)] >= 0) {
                if (m_outputs.contains(node.id))
                    provide(node.id); // else made where it is read
                continue;
            }
            for (ValueId arg : node.args)
                provide(arg);
            m_stage.graph.nodes.push_back(node);
            m_present.insert(node.id);
        }
        const auto madeHere = [&](ValueId id) {
            const std::int64_t made = m_table.producedAt[m_table.index.at(id)];
            return made >= m_a && made < static_cast<std::int64_t>(b);
        };
        for (std::size_t o = 0; o < m_graph.outputs.size(); ++o)
            if (madeHere(m_graph.outputs[o])) {
                cut.outputs[o] = OutputPlace{cut.stages.size(), m_stage.graph.outputs.size()};
                m_stage.graph.outputs.push_back(m_graph.outputs[o]);
            }
        m_stage.researcherOutputs = m_stage.graph.outputs.size();
        for (std::size_t p = a; p < b; ++p) {
            const ValueId id = m_graph.nodes[m_order[p]].id;
            const std::size_t v = m_table.index.at(id);
            if (m_table.lastUse[v] >= static_cast<std::int64_t>(b) && m_table.viewOf[v] < 0) {
                m_handedOn[id] = OutputPlace{cut.stages.size(), m_stage.graph.outputs.size()};
                m_stage.graph.outputs.push_back(id);
                cut.boundaryBytes += m_table.bytes[v];
            }
        }
        if (!m_stage.graph.outputs.empty()) // else only values nothing reads
            cut.stages.push_back(std::move(m_stage));
    }

private:
    // Makes `value` available to the stage being made: computed in it before its reader, given
    // (an input, a constant, an earlier stage's value), or for a view of an input, made from it.
    void provide(ValueId value) {
        if (m_present.contains(value))
            return;
        const std::size_t v = m_table.index.at(value);
        if (m_table.viewOf[v] >= 0) {
            const auto& node = m_graph.nodes[m_producer.at(value)];
            provide(node.args.front());
            m_stage.graph.nodes.push_back(node);
            m_present.insert(value);
            return;
        }
        if (m_table.producedAt[v] >= m_a)
            return;
        m_present.insert(value);
        if (auto constant = m_constants.find(value); constant != m_constants.end()) {
            m_stage.graph.constants.push_back(*constant->second);
            return;
        }
        m_stage.graph.inputs.push_back({value, m_plan.specs.at(value)});
        if (auto input = m_inputIndex.find(value); input != m_inputIndex.end())
            m_stage.sources.push_back({StageSource::Kind::GraphInput, input->second, 0, 0});
        else
            m_stage.sources.push_back({StageSource::Kind::Boundary, 0, m_handedOn.at(value).stage,
                                       m_handedOn.at(value).output});
    }

    const Graph& m_graph;
    const GraphPlan& m_plan;
    const std::vector<std::size_t>& m_order;
    const ValueTable& m_table;
    StageMeasure m_measure;
    std::set<ValueId> m_outputs;
    std::map<ValueId, std::size_t> m_inputIndex;
    std::map<ValueId, const core::graph::GraphConstant*> m_constants;
    std::unordered_map<ValueId, std::size_t> m_producer;
    std::map<ValueId, OutputPlace> m_handedOn; // boundary values, where their stage outputs them
    GraphStage m_stage;
    std::set<ValueId> m_present;
    std::int64_t m_a = 0;
};

} // namespace

std::int64_t specBytes(const core::ops::TensorSpec& spec) {
    return static_cast<std::int64_t>(core::byteSize(spec.dtype, spec.shape).value_or(0));
}

std::int64_t graphValueBytes(const GraphPlan& plan) {
    std::int64_t total = 0;
    for (const auto& [id, spec] : plan.specs)
        total += specBytes(spec);
    return total;
}

std::int64_t heldAtOnce(const Graph& graph, const GraphPlan& plan,
                        const std::vector<bool>& keptToEnd) {
    const ValueTable table = tableOf(graph, plan, plan.order, StageMeasure::HeldAtOnce, keptToEnd);
    StageMeter meter(graph, plan.order, table, StageMeasure::HeldAtOnce, 0);
    for (std::size_t v = 0; v < graph.inputs.size() + graph.constants.size(); ++v)
        meter.give(v); // the executor holds every input it is given, read or not
    for (std::size_t p = 0; p < plan.order.size(); ++p)
        meter.take(p);
    return meter.held();
}

Expected<StageCut> cutIntoStages(const Graph& graph, const GraphPlan& plan,
                                 std::int64_t budgetBytes, const CutRules& rules) {
    if ((!rules.nodeCosts.empty() && rules.nodeCosts.size() != graph.nodes.size()) ||
        (!rules.keptToEnd.empty() && rules.keptToEnd.size() != graph.nodes.size()))
        return makeError(ErrorCode::InvalidInput,
                         "the node costs or kept values are not one per node");
    const std::vector<std::size_t> order = rules.measure == StageMeasure::HeldAtOnce
                                               ? lateOrder(graph, plan)
                                               : breadthFirstOrder(graph);
    const std::size_t n = order.size();
    const ValueTable table = tableOf(graph, plan, order, rules.measure, rules.keptToEnd);
    std::vector<double> costBefore(n + 1, 0.0);
    for (std::size_t p = 0; p < n && !rules.nodeCosts.empty(); ++p)
        costBefore[p + 1] = costBefore[p] + rules.nodeCosts[order[p]];
    for (ValueId output : graph.outputs)
        if (table.producedAt[table.index.at(output)] < 0)
            return makeError(ErrorCode::InvalidInput,
                             "an output of the graph is an input or a constant: no stage makes it");
    const std::vector<std::size_t> ends = longestStages(graph, order, table, rules, budgetBytes);
    for (std::size_t a = 0; a < n; ++a) {
        if (ends[a] > a)
            continue;
        // A stage holding this node holds at least what it holds alone.
        const auto& node = graph.nodes[order[a]];
        StageMeter meter(graph, order, table, rules.measure, a);
        const std::int64_t alone = meter.take(a);
        const std::string named = "its node " + std::to_string(node.id) + " (" +
                                  std::string(core::ops::opInfo(node.op).name) + ")";
        if (alone <= budgetBytes)
            return makeError(ErrorCode::LimitExceeded,
                             named + " alone reads more values than a stage may take");
        return makeError(ErrorCode::LimitExceeded, named + " alone holds " + std::to_string(alone) +
                                                       " bytes with what it reads");
    }
    std::vector<std::size_t> valueAt(n);
    for (std::size_t p = 0; p < n; ++p)
        valueAt[p] = table.index.at(graph.nodes[order[p]].id);
    const auto cuts =
        bestCuts(ends, crossingBytes(table, n), costBefore, table, valueAt, rules.maxStageOutputs);
    if (!cuts)
        return tl::unexpected(cuts.error());
    StageCut cut;
    cut.outputs.resize(graph.outputs.size());
    StageMaker maker(graph, plan, order, table, rules.measure);
    for (std::size_t s = 0; s + 1 < cuts->size(); ++s)
        maker.add((*cuts)[s], (*cuts)[s + 1], cut);
    return cut;
}

} // namespace goblin::plan
