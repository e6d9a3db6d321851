#include "kinds/matmul/task_message.hpp"

#include "goblin/net/messages/volunteer_messages.hpp"

namespace goblin::labnode {

TileFrameSource tileFrameSource(const RunningJob& job, const TileTask& task, std::int64_t attempt) {
    const JobRecord& record = job.record;
    return TileFrameSource{task.id,
                           attempt,
                           record.dtype,
                           core::subView(job.aView(), task.row0, task.rows, 0, record.k),
                           core::subView(job.bView(), 0, record.k, task.col0, task.cols),
                           job.a,
                           job.b};
}

Expected<net::Message> taskMessage(const TileFrameSource& source) {
    // From the mapped inputs in chunks whose pages leave the node as they are copied.
    auto aRows =
        source.keepA ? source.keepA->copyOut(source.aRows) : core::copyToTensor(source.aRows);
    if (!aRows)
        return tl::unexpected(aRows.error());
    auto bColumns =
        source.keepB ? source.keepB->copyOut(source.bColumns) : core::copyToTensor(source.bColumns);
    if (!bColumns)
        return tl::unexpected(bColumns.error());
    return net::toMessage(
        net::MatmulTask{net::TaskRef{source.task, source.attempt}, source.dtype,
                        std::make_shared<const core::Tensor>(std::move(*aRows)),
                        std::make_shared<const core::Tensor>(std::move(*bColumns))});
}

} // namespace goblin::labnode
