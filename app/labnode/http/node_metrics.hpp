// GET /metrics: the node's counters and a NodeSnapshot as Prometheus text. NodeCounters are what
// the node counts in memory since it started (HTTP requests, commit latency); they live on the
// core thread, like the snapshot they are rendered with.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "goblin/net/ws_connection.hpp"

#include "http/metrics_text.hpp"
#include "http/node_snapshot.hpp"

namespace goblin::labnode {

struct NodeCounters {
    NodeCounters();
    // By path; paths the node does not serve count as "other", so scrapers cannot grow the map.
    std::map<std::string, std::uint64_t> httpRequests;
    Histogram dbCommitSeconds;
    // WebSocket payload bytes, counted by the network threads (atomics); null: not counted.
    std::shared_ptr<const net::TrafficCounters> traffic;
};

// What the running process says about itself: goblin_build_info, process_start_time_seconds and
// goblin_uptime_seconds.
struct ProcessInfo {
    std::string version = "unknown";
    double startTime = 0;     // epoch seconds
    double uptimeSeconds = 0; // on a steady clock, so a wall-clock change does not move it
};

// Bucket bounds of goblin_db_commit_seconds: 100 µs to 10 s.
std::vector<double> commitLatencyBounds();

std::string renderMetrics(const NodeSnapshot& snapshot, const NodeCounters& counters,
                          const ProcessInfo& process = {});

} // namespace goblin::labnode
