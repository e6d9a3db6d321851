// The task frame a volunteer receives for one lease: op, dtype, task and attempt numbers and the
// tile's A rows and B columns — never a job name, researcher identity or description.
// `TileFrameSource` holds what the frame is copied from (views kept alive by the mapped inputs),
// so a worker can build it. Pure; safe on any thread.
#pragma once

#include <cstdint>
#include <memory>

#include "goblin/core/error.hpp"
#include "goblin/core/tensor.hpp"
#include "goblin/net/message.hpp"
#include "kinds/matmul/job_book.hpp"
#include "store/blob_store.hpp"

namespace goblin::labnode {

struct TileFrameSource {
    std::int64_t task = 0;
    std::int64_t attempt = 0;
    core::DType dtype = core::DType::F32;
    core::MatrixView aRows, bColumns;
    std::shared_ptr<MappedFile> keepA, keepB;

    std::int64_t elements() const {
        return aRows.rows * aRows.cols + bColumns.rows * bColumns.cols;
    }
};

TileFrameSource tileFrameSource(const RunningJob& job, const TileTask& task, std::int64_t attempt);
Expected<net::Message> taskMessage(const TileFrameSource& source);

} // namespace goblin::labnode
