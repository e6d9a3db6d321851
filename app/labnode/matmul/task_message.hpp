// The task frame a volunteer receives for one lease: op, dtype, task and attempt numbers and the
// tile's A rows and B columns — never a job name, researcher identity or description.
// Pure function (it copies from the mapped inputs); safe on any thread.
#pragma once

#include <cstdint>

#include "goblin/core/error.hpp"
#include "goblin/net/message.hpp"
#include "job_book.hpp"

namespace goblin::labnode {

Expected<net::Message> taskMessage(const RunningJob& job, const TileTask& task,
                                   std::int64_t attempt);

} // namespace goblin::labnode
