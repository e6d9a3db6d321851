// What a stage cut knows of a graph's values, and what a stage holds and outputs as it grows:
// the internals of stage_cut.cpp (plan/stage_cut.hpp), shared by nothing else.
#pragma once

#include "goblin/plan/stage_cut.hpp"

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace goblin::plan::detail {

using core::graph::Graph;
using core::graph::GraphPlan;
using core::graph::ValueId;

// The graph's values densely numbered: what a cut needs to know of each.
struct ValueTable {
    std::unordered_map<ValueId, std::size_t> index;
    std::vector<std::int64_t> bytes;
    std::vector<std::int64_t> producedAt; // position in the order; -1 for inputs and constants
    std::vector<std::int64_t> lastUse;    // last position that reads it; -1 when none does
    std::vector<std::int64_t> newBytes;   // what making it allocates (0: a reshape shares storage)
    // The input or constant a value is a reshape of (through reshapes), else -1: a stage reading
    // it makes it from that input rather than take it from the stage that made it.
    std::vector<std::int64_t> viewOf;
    std::vector<bool> constant;
    std::vector<int> outputSlots;                     // how often the graph's outputs list it
    std::vector<std::vector<std::size_t>> freedAfter; // per position: storage dropped then
    std::vector<std::vector<std::size_t>> lastReadAt; // per position: values read there last

    std::size_t add(ValueId id, std::int64_t size, std::int64_t position) {
        index.emplace(id, bytes.size());
        bytes.push_back(size);
        producedAt.push_back(position);
        lastUse.push_back(-1);
        newBytes.push_back(size);
        viewOf.push_back(-1);
        constant.push_back(false);
        outputSlots.push_back(0);
        return bytes.size() - 1;
    }
};

// `order`: node indices; `keptToEnd` one per node of graph.nodes, or empty.
ValueTable tableOf(const Graph& graph, const GraphPlan& plan, const std::vector<std::size_t>& order,
                   StageMeasure measure, const std::vector<bool>& keptToEnd);

// What a stage starting at position `a` holds as it takes one node after another.
class StageMeter {
public:
    StageMeter(const Graph& graph, const std::vector<std::size_t>& order, const ValueTable& table,
               StageMeasure measure, std::size_t a)
        : m_graph(graph), m_order(order), m_table(table), m_measure(measure), m_a(a),
          m_given(table.bytes.size(), false) {}

    // A value given to the stage (an input, a constant or an earlier stage's), held throughout.
    void give(std::size_t v) {
        if (m_given[v])
            return;
        m_given[v] = true;
        m_fixed += m_table.bytes[v];
        ++(m_table.constant[v] ? m_constants : m_inputs);
    }

    // Whether what the stage takes so far stays within the rules' counts.
    bool countsWithin(const CutRules& rules) const {
        return (rules.maxStageInputs == 0 || m_inputs <= rules.maxStageInputs) &&
               (rules.maxStageInputsAndConstants == 0 ||
                m_inputs + m_constants <= rules.maxStageInputsAndConstants);
    }

    // What the stage holds with position `p` (the next one) taken too.
    std::int64_t take(std::size_t p) {
        const auto& node = m_graph.nodes[m_order[p]];
        for (ValueId arg : node.args) {
            const std::size_t v = m_table.index.at(arg);
            if (m_table.viewOf[v] >= 0)
                give(static_cast<std::size_t>(m_table.viewOf[v])); // made where it is read
            else if (m_table.producedAt[v] < static_cast<std::int64_t>(m_a))
                give(v);
        }
        m_running += m_table.newBytes[m_table.index.at(node.id)];
        m_peak = std::max(m_peak, m_running);
        if (m_measure == StageMeasure::HeldAtOnce)
            for (std::size_t v : m_table.freedAfter[p])
                if (m_table.producedAt[v] >= static_cast<std::int64_t>(m_a))
                    m_running -= m_table.newBytes[v];
        return held();
    }

    std::int64_t held() const { return m_fixed + m_peak; }

private:
    const Graph& m_graph;
    const std::vector<std::size_t>& m_order;
    const ValueTable& m_table;
    StageMeasure m_measure;
    std::size_t m_a;
    std::vector<bool> m_given;
    std::int64_t m_fixed = 0;
    std::int64_t m_running = 0;
    std::int64_t m_peak = 0;
    std::size_t m_inputs = 0;
    std::size_t m_constants = 0;
};

// How many values a stage starting at position `a` outputs as it takes one node after another:
// the graph's outputs it makes (as often as the outputs list them) and the values it makes that
// a later position reads, as StageMaker lists them.
class OutputCounter {
public:
    explicit OutputCounter(const ValueTable& table) : m_table(table) {}

    void start(std::size_t a) {
        m_a = static_cast<std::int64_t>(a);
        m_count = 0;
    }

    // The count with position `p` (the next one) taken too.
    std::size_t take(std::size_t p, std::size_t value) {
        const auto position = static_cast<std::int64_t>(p);
        m_count += static_cast<std::size_t>(m_table.outputSlots[value]);
        if (handedOn(value) && m_table.lastUse[value] > position)
            ++m_count;
        for (std::size_t read : m_table.lastReadAt[p]) // no longer read after the stage
            if (handedOn(read) && m_table.producedAt[read] >= m_a &&
                m_table.producedAt[read] < position)
                --m_count;
        return m_count;
    }

private:
    bool handedOn(std::size_t value) const { return m_table.viewOf[value] < 0; }

    const ValueTable& m_table;
    std::int64_t m_a = 0;
    std::size_t m_count = 0;
};

} // namespace goblin::plan::detail
