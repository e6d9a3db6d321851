// What /metrics and /status show, gathered in one pass: job, task and verdict counts from SQLite,
// the connected volunteers and their leases from the peer registry and the scheduler. Ids, states,
// methods, backends and numbers only: never a job's data, a researcher or an e-mail address.
// Taken on the core thread (the one owner of the database connection).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace goblin::labnode {

class Database;
class PeerRegistry;
class Scheduler;

struct CountRow {
    std::string kind;   // matmul | graph
    std::string first;  // jobs: state; verdicts: method
    std::string second; // verdicts: verdict
    std::int64_t count = 0;
};

struct JobRow {
    std::string id, kind, state;
    std::int64_t tasksDone = 0, tasksTotal = 0;
};

struct VolunteerRow {
    std::string id, backend;
    int slots = 0, leases = 0;
    std::int64_t auditsPassed = 0;
    bool quarantined = false;
};

struct VerdictRow {
    std::string kind;
    std::int64_t task = 0;
    std::string volunteer, method, verdict;
};

struct NodeSnapshot {
    std::vector<CountRow> jobs;     // by kind and state
    std::vector<CountRow> verdicts; // by kind, method and verdict
    std::int64_t tasksPending = 0;  // tasks of running jobs not yet decided (leased or not)
    std::int64_t leases = 0;        // leases held by connected volunteers
    double verificationSeconds = 0; // node time spent checking volunteers' results
    std::vector<JobRow> recentJobs; // newest first
    std::vector<VolunteerRow> volunteers;
    std::vector<VerdictRow> recentVerdicts; // newest first
};

inline constexpr int kStatusJobs = 50;
inline constexpr int kStatusVerdicts = 20;

NodeSnapshot takeSnapshot(Database& db, const PeerRegistry& peers, const Scheduler& scheduler);

} // namespace goblin::labnode
