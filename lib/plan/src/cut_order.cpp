#include "goblin/plan/cut_order.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <unordered_map>
#include <utility>

namespace goblin::plan {
namespace {

using core::graph::Graph;
using core::graph::GraphPlan;
using core::graph::ValueId;

// Layout and dtype ops: they rearrange their argument's elements without arithmetic.
bool rearranges(core::ops::OpCode op) {
    using core::ops::OpCode;
    return op == OpCode::Cast || op == OpCode::Reshape || op == OpCode::Permute ||
           op == OpCode::Expand || op == OpCode::Slice || op == OpCode::Concat;
}

} // namespace

std::vector<std::size_t> breadthFirstOrder(const Graph& graph) {
    std::unordered_map<ValueId, std::size_t> producer;
    for (std::size_t i = 0; i < graph.nodes.size(); ++i)
        producer.emplace(graph.nodes[i].id, i);
    std::vector<std::size_t> pending(graph.nodes.size(), 0);
    std::vector<std::vector<std::size_t>> users(graph.nodes.size());
    for (std::size_t i = 0; i < graph.nodes.size(); ++i)
        for (ValueId arg : graph.nodes[i].args)
            if (auto it = producer.find(arg); it != producer.end()) {
                ++pending[i];
                users[it->second].push_back(i);
            }
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < graph.nodes.size(); ++i)
        if (pending[i] == 0)
            order.push_back(i);
    for (std::size_t next = 0; next < order.size(); ++next)
        for (std::size_t user : users[order[next]])
            if (--pending[user] == 0)
                order.push_back(user);
    return order; // a validated graph has no cycle: every node is in it
}

std::vector<std::size_t> lateOrder(const Graph& graph, const GraphPlan& plan) {
    const std::size_t n = plan.order.size();
    std::unordered_map<ValueId, std::size_t> producer;
    std::vector<std::size_t> position(graph.nodes.size());
    for (std::size_t p = 0; p < n; ++p) {
        producer.emplace(graph.nodes[plan.order[p]].id, plan.order[p]);
        position[plan.order[p]] = p;
    }
    std::vector<bool> fromInputs(graph.nodes.size(), false);
    for (std::size_t i : plan.order)
        fromInputs[i] =
            rearranges(graph.nodes[i].op) &&
            std::all_of(graph.nodes[i].args.begin(), graph.nodes[i].args.end(), [&](ValueId arg) {
                const auto it = producer.find(arg);
                return it == producer.end() || fromInputs[it->second];
            });
    constexpr std::size_t kUnread = std::numeric_limits<std::size_t>::max();
    std::vector<std::size_t> late(graph.nodes.size(), kUnread);
    for (std::size_t p = n; p-- > 0;) {
        const std::size_t i = plan.order[p];
        if (!fromInputs[i] || late[i] == kUnread)
            late[i] = p;
        for (ValueId arg : graph.nodes[i].args)
            if (const auto it = producer.find(arg); it != producer.end() && fromInputs[it->second])
                late[it->second] = std::min(late[it->second], late[i]);
    }
    std::vector<std::size_t> place = std::move(late);
    for (std::size_t i : plan.order)
        if (graph.nodes[i].op == core::ops::OpCode::Reshape && !fromInputs[i])
            place[i] = place[producer.at(graph.nodes[i].args.front())];
    // Nodes no output depends on are left out: no stage computes them.
    std::vector<bool> needed(graph.nodes.size(), false);
    for (ValueId output : graph.outputs)
        if (const auto it = producer.find(output); it != producer.end())
            needed[it->second] = true;
    for (std::size_t p = n; p-- > 0;)
        if (needed[plan.order[p]])
            for (ValueId arg : graph.nodes[plan.order[p]].args)
                if (const auto it = producer.find(arg); it != producer.end())
                    needed[it->second] = true;
    std::vector<std::size_t> order;
    std::copy_if(plan.order.begin(), plan.order.end(), std::back_inserter(order),
                 [&](std::size_t i) { return needed[i]; });
    std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
        return std::pair{place[x], position[x]} < std::pair{place[y], position[y]};
    });
    return order;
}

} // namespace goblin::plan
