#include "task_message.hpp"

#include "goblin/net/messages/volunteer_messages.hpp"

namespace goblin::labnode {

Expected<net::Message> taskMessage(const RunningJob& job, const TileTask& task,
                                   std::int64_t attempt) {
    const JobRecord& record = job.record;
    auto aRows = core::copyToTensor(core::subView(job.aView(), task.row0, task.rows, 0, record.k));
    if (!aRows)
        return tl::unexpected(aRows.error());
    auto bColumns =
        core::copyToTensor(core::subView(job.bView(), 0, record.k, task.col0, task.cols));
    if (!bColumns)
        return tl::unexpected(bColumns.error());
    return net::toMessage(
        net::MatmulTask{net::TaskRef{task.id, attempt}, record.dtype,
                        std::make_shared<const core::Tensor>(std::move(*aRows)),
                        std::make_shared<const core::Tensor>(std::move(*bColumns))});
}

} // namespace goblin::labnode
