#include "kinds/matmul/matmul_delivery.hpp"

#include <boost/asio/post.hpp>
#include <boost/json/object.hpp>

#include "goblin/net/messages/handshake.hpp"
#include "goblin/net/messages/researcher_messages.hpp"
#include "kinds/matmul/matmul_request.hpp"

namespace goblin::labnode {

namespace json = boost::json;

namespace {

std::size_t productBytes(const JobRecord& job) {
    return static_cast<std::size_t>(job.m) * static_cast<std::size_t>(job.n) *
           core::itemSize(job.dtype);
}

} // namespace

void deliverMatmulResult(NodeContext& context, std::shared_ptr<PeerLink> link, const JobRecord& job,
                         std::int64_t requestId, std::size_t maxTensorBytes, bool streamed) {
    json::object summary = summaryJson(job, context.store.summaryCounts(job.id), context.clock());
    if (streamed || productBytes(job) > wholeProductBytes(maxTensorBytes)) {
        summary["delivery"] = streamed ? "tiles" : "rows";
        link->send(net::toMessage(net::JobDone{requestId, job.id, std::move(summary), {}}));
        return;
    }
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

Expected<void> deliverMatmulRows(NodeContext& context, std::shared_ptr<PeerLink> link,
                                 const JobRecord& job, const net::FetchRows& fetch,
                                 std::size_t maxTensorBytes) {
    if (job.state != JobState::Done)
        return makeError(ErrorCode::InvalidInput, "job " + job.id + " is " +
                                                      std::string(jobStateName(job.state)) +
                                                      "; only a done job has rows");
    if (fetch.row0 >= job.m || fetch.rows > job.m - fetch.row0)
        return makeError(ErrorCode::InvalidInput,
                         "rows " + std::to_string(fetch.row0) + " + " + std::to_string(fetch.rows) +
                             " are outside C's " + std::to_string(job.m) + " rows");
    const std::size_t rowBytes = static_cast<std::size_t>(job.n) * core::itemSize(job.dtype);
    if (static_cast<std::size_t>(fetch.rows) > maxTensorBytes / rowBytes)
        return makeError(ErrorCode::LimitExceeded, std::to_string(fetch.rows) + " rows of " +
                                                       std::to_string(rowBytes) +
                                                       " bytes are over the tensor limit of " +
                                                       std::to_string(maxTensorBytes) + " bytes");
    boost::asio::post(context.workers, [&context, link = std::move(link), job, fetch] {
        auto rows = context.blobs.readResultRows(job.id, job.dtype, fetch.row0, fetch.rows, job.n);
        if (!rows) {
            context.log.error("job " + job.id + ": rows could not be read (" +
                              rows.error().message + ")");
            link->send(net::toMessage(net::ErrorReply{
                fetch.id, Error{ErrorCode::Internal, "the product's rows could not be read"}}));
            return;
        }
        link->send(net::toMessage(net::ResultRows{
            fetch.id, job.id, fetch.row0, std::make_shared<const core::Tensor>(std::move(*rows))}));
    });
    return {};
}

} // namespace goblin::labnode
