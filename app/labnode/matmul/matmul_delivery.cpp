#include "matmul_delivery.hpp"

#include <boost/asio/post.hpp>
#include <boost/json/object.hpp>

#include "goblin/net/messages/researcher_messages.hpp"
#include "matmul_request.hpp"

namespace goblin::labnode {

namespace json = boost::json;

void deliverMatmulResult(NodeContext& context, std::shared_ptr<PeerLink> link, const JobRecord& job,
                         std::int64_t requestId) {
    json::object summary = summaryJson(job, context.store.summaryCounts(job.id), context.clock());
    boost::asio::post(context.workers, [&blobs = context.blobs, link = std::move(link), job,
                                        requestId, summary = std::move(summary)] {
        auto product = blobs.readResult(job.id, job.dtype, {job.m, job.n});
        if (!product) {
            link->send(net::toMessage(
                net::JobFailed{job.id, Error{ErrorCode::Internal, product.error().message}}));
            return;
        }
        link->send(net::toMessage(
            net::JobDone{requestId,
                         job.id,
                         summary,
                         {std::make_shared<const core::Tensor>(std::move(*product))}}));
    });
}

} // namespace goblin::labnode
