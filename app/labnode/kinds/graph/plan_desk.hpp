// Answers plan_graph (docs/protocol.md, "Plan preview"): a worker plans the request for the graph
// volunteers connected now (graph_preview.hpp) and core sends graph_plan, or the error a
// submit_graph of the same fields would get. Nothing is stored. Like Beast's chat-multi roles:
// it holds references to the node's parts and is called on core.
#pragma once

#include <functional>

#include "goblin/net/message.hpp"
#include "kinds/graph/graph_intake.hpp"
#include "node/node_context.hpp"
#include "node/peer_registry.hpp"
#include "node/researcher_desk.hpp"

namespace goblin::labnode {

class PlanDesk {
public:
    PlanDesk(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk,
             const GraphIntakeSettings& settings, std::function<VolunteerPool()> pool)
        : m_context(context), m_peers(peers), m_desk(desk), m_settings(settings),
          m_pool(std::move(pool)) {}

    // Core: a researcher's plan_graph; an error when it is malformed (the desk answers it).
    Expected<void> onPlanGraph(const ResearcherRequest& request, const net::Message& message);

private:
    NodeContext& m_context;
    PeerRegistry& m_peers;
    ResearcherDesk& m_desk;
    const GraphIntakeSettings& m_settings;
    std::function<VolunteerPool()> m_pool;
};

} // namespace goblin::labnode
