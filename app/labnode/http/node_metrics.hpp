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

// Bucket bounds of goblin_db_commit_seconds: 100 µs to 10 s.
std::vector<double> commitLatencyBounds();

std::string renderMetrics(const NodeSnapshot& snapshot, const NodeCounters& counters);

} // namespace goblin::labnode
