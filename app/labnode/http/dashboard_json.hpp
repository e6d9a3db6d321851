// GET /dashboard.json: everything the live dashboard draws, as one JSON object: the node's
// counts, jobs of every kind, training jobs with their rounds' losses, connected volunteers and
// the tasks they hold, recent verdicts and the last hour's per-minute counts. Times are epoch
// seconds (the page formats them); a number that is not finite is null. Pure function.
#pragma once

#include <string>

#include "http/minute_history.hpp"
#include "http/node_metrics.hpp"
#include "http/node_snapshot.hpp"

namespace goblin::labnode {

std::string renderDashboardJson(const NodeSnapshot& snapshot, const MinuteHistory::Window& history,
                                const ProcessInfo& process, double now);

} // namespace goblin::labnode
