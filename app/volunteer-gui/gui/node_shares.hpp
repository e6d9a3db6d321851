// The lab nodes a volunteer is attached to and how the lent compute is shared between them: URL
// validation, share percentages and the per-node compute plan. Pure functions; any thread.
#pragma once

#include <QString>

#include <optional>
#include <vector>

#include "compute_gate.hpp"
#include "engine_status.hpp"

namespace goblin::volunteer {

inline constexpr int kMaxNodes = 8;
inline constexpr int kMaxShare = 100; // a share is a weight, 1-100

struct AttachedNode {
    QString url;
    int share = 1;
    bool operator==(const AttachedNode&) const = default;
};

// What the window shows of one node: its engine's status and its share.
struct NodeStatus {
    QString url;
    int sharePercent = 100;
    EngineStatus engine;
};

// Empty when `url` is a lab node address this app can use, else a sentence for the window.
std::optional<QString> nodeUrlProblem(const QString& url);

// Each node's share as a percentage of the whole (rounded; a node with a share gets at least 1).
std::vector<int> sharePercents(const std::vector<AttachedNode>& nodes);

// The plan of one node's engine: its share of the volunteer's CPU-time duty (at least 1 %), on the
// same threads. Every engine of the process uses the same thread count because the BLAS thread
// count is process-wide; the share is split in time instead, so the sum never exceeds the limit.
ComputePlan planForShare(const ComputePlan& whole, int percent);

} // namespace goblin::volunteer
