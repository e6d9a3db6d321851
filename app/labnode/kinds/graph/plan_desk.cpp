#include "kinds/graph/plan_desk.hpp"

#include <boost/asio/post.hpp>

#include "kinds/graph/graph_preview.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;

Expected<void> PlanDesk::onPlanGraph(const ResearcherRequest& request,
                                     const net::Message& message) {
    auto parsed = net::parsePlanGraph(message.control);
    if (!parsed)
        return tl::unexpected(parsed.error());
    // Decoding, validating and cutting a graph are O(size): a worker does them.
    asio::post(m_context.workers, [this, request, pool = m_pool(), plan = std::move(*parsed)] {
        auto answer = previewGraphPlan(plan, pool, m_settings);
        asio::post(m_context.core, [this, request, answer = std::move(answer)] {
            if (!answer)
                return m_desk.replyError(request.peer, request.requestId, answer.error());
            m_peers.send(request.peer, net::toMessage(*answer));
        });
    });
    return {};
}

} // namespace goblin::labnode
