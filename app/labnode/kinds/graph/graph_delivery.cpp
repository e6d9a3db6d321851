#include "kinds/graph/graph_delivery.hpp"

#include <boost/json/object.hpp>

#include "goblin/net/messages/researcher_messages.hpp"
#include "kinds/graph/graph_store.hpp"

namespace goblin::labnode {

namespace json = boost::json;

net::Message graphDoneMessage(Database& db, const FinishedGraph& job, std::int64_t requestId) {
    const GraphSummaryCounts counts = graphSummaryCounts(db, job.id);
    json::object backends;
    for (const auto& [name, count] : counts.backends)
        backends[name] = count;
    json::object summary{
        {"kind", "graph"},
        {"tasks", job.tasks},
        {"verdicts", json::object{{"accepted", counts.accepted}, {"rejected", counts.rejected}}},
        {"node_recomputed", counts.audited},
        {"node_caught", counts.caught},
        {"node_tiebreaks", counts.tiebreaks},
        {"volunteers", counts.volunteers},
        {"backends", std::move(backends)},
        {"max_disagreement_ratio", counts.worstRatio},
        {"verification_seconds", job.verifySeconds},
        {"seconds", job.seconds}};
    std::vector<net::TensorPtr> tensors;
    for (const core::Tensor& output : job.outputs)
        tensors.push_back(std::make_shared<const core::Tensor>(output));
    return net::toMessage(net::JobDone{requestId, job.id, std::move(summary), std::move(tensors)});
}

std::string describeVerdicts(Database& db, const std::string& jobId) {
    const GraphSummaryCounts counts = graphSummaryCounts(db, jobId);
    return std::to_string(counts.accepted) + " replica(s) accepted, " +
           std::to_string(counts.rejected) + " rejected, " + std::to_string(counts.audited) +
           " task(s) audited by the node (" + std::to_string(counts.caught) + " caught)";
}

} // namespace goblin::labnode
