#include "matmul_delivery.hpp"

#include <boost/asio/post.hpp>
#include <boost/json/object.hpp>

#include "matmul_request.hpp"

namespace goblin::labnode {

namespace json = boost::json;

void deliverMatmulResult(NodeContext& context, std::shared_ptr<PeerLink> link, const JobRecord& job,
                         std::int64_t requestId) {
    json::object summary = summaryJson(job, context.store.summaryCounts(job.id), context.clock());
    boost::asio::post(context.workers, [&blobs = context.blobs, link = std::move(link), job, requestId,
                                        summary = std::move(summary)] {
        auto product = blobs.readResult(job.id, job.dtype, {job.m, job.n});
        if (!product) {
            link->send(net::Message{json::object{{"type", "job_failed"},
                                                 {"job", job.id},
                                                 {"code", "internal"},
                                                 {"message", product.error().message}},
                                    {}});
            return;
        }
        link->send(net::Message{json::object{{"type", "job_done"},
                                             {"id", requestId},
                                             {"job", job.id},
                                             {"summary", summary}},
                                {std::make_shared<const core::Tensor>(std::move(*product))}});
    });
}

} // namespace goblin::labnode
