// Durable records of graph jobs: the job, its tasks and every replica's verdict (schema in
// node_store.cpp). Callers group writes in a Transaction. Core thread only, like NodeStore.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "database.hpp"
#include "goblin/core/error.hpp"

namespace goblin::labnode {

struct GraphVerdictRecord {
    std::int64_t taskId = 0;
    std::int64_t attempt = 0;
    std::string volunteerId;
    std::string backend;
    bool accepted = false;
    std::string method; // replica-agreement | node-sample | node-tiebreak
    double ratio = 0;   // worst |Δ|/bound against the decision (0: bit for bit)
    std::string reason;
    double computeSeconds = 0;
};

struct GraphJobRow {
    std::string id;
    std::int64_t researcherId = 0;
    std::string state;
};

Expected<void> insertGraphJob(Database& db, const std::string& id, std::int64_t researcher,
                              std::int64_t tasks, double now);
Expected<std::int64_t> insertGraphTask(Database& db, const std::string& jobId, std::int64_t chunk);
Expected<void> recordGraphVerdict(Database& db, const GraphVerdictRecord& verdict, double now);
Expected<void> setGraphTaskAccepted(Database& db, std::int64_t taskId);
Expected<void> setGraphJobState(Database& db, const std::string& id, const std::string& state,
                                double now);
std::optional<GraphJobRow> graphJob(Database& db, const std::string& id);
// At start-up: graph jobs live in memory while they run, so those a stopped node was running
// are marked failed. Returns how many.
std::int64_t failInterruptedGraphJobs(Database& db, double now);

} // namespace goblin::labnode
