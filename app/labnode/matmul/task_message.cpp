#include "task_message.hpp"

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
    auto aRows = core::copyToTensor(source.aRows);
    if (!aRows)
        return tl::unexpected(aRows.error());
    auto bColumns = core::copyToTensor(source.bColumns);
    if (!bColumns)
        return tl::unexpected(bColumns.error());
    // Copied: out of the node's memory, into the frame's.
    if (source.keepA)
        source.keepA->release(source.aRows);
    if (source.keepB)
        source.keepB->release(source.bColumns);
    return net::toMessage(
        net::MatmulTask{net::TaskRef{source.task, source.attempt}, source.dtype,
                        std::make_shared<const core::Tensor>(std::move(*aRows)),
                        std::make_shared<const core::Tensor>(std::move(*bColumns))});
}

} // namespace goblin::labnode
