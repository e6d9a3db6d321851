// Task groups another job owns: a training job runs each of its rounds as a group of graph tasks
// (a row of graph_jobs naming it in owner_job). The group is part of its owner's lifecycle: only
// the owner fetches, releases, cancels, purges and lists it; a researcher or lab staff acting on
// the group itself is told which job to act on instead. Its verification is reported on the
// group's id (`audit`), as the owner's round records name it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "goblin/core/error.hpp"

namespace goblin::labnode {

struct GroupOwner {
    std::string job; // empty: the group is a job of its own (a researcher's graph job)
    std::int64_t round = 0;

    bool owned() const { return !job.empty(); }
    // For log lines after the group's id: " (round R of training job T)", or "" for no owner.
    std::string describe() const;
    // Why `action` ("fetch", "cancel", …) on the group `groupId` itself is refused.
    Error refusal(std::string_view groupId, std::string_view action) const;
};

} // namespace goblin::labnode
