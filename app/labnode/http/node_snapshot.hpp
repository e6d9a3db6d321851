// What /metrics, /status and the dashboard show, gathered in one pass: job, task and verdict
// counts from SQLite, training jobs and their rounds, the connected volunteers and what they hold
// from the peer registry and the scheduler. Ids, states, methods, backends, times and numbers only:
// never a job's data, a researcher or an e-mail address. Taken on the core thread (the one owner
// of the database connection).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace goblin::labnode {

class Database;
class PeerRegistry;
class Scheduler;

struct CountRow {
    std::string kind;   // matmul | graph | train
    std::string first;  // jobs: state; verdicts: method
    std::string second; // verdicts: verdict
    std::int64_t count = 0;
};

// A job a researcher submitted (a training round's graph job is listed under its training job).
// Training jobs count rounds as their tasks.
struct JobRow {
    std::string id, kind, state;
    std::int64_t tasksDone = 0, tasksTotal = 0;
    double createdAt = 0, finishedAt = 0; // epoch seconds; finishedAt 0: not finished
};

// A task a volunteer holds a lease on, and the job it belongs to.
struct HeldTask {
    std::string kind;
    std::int64_t task = 0;
    std::string job;
};

struct VolunteerRow {
    std::string id, backend;
    int slots = 0, leases = 0;
    std::int64_t auditsPassed = 0;
    bool quarantined = false;
    std::vector<HeldTask> holds;
};

// One committed round of a training job.
struct RoundRow {
    std::int64_t round = 0; // absolute (a resumed run continues its count)
    double loss = 0;
    std::int64_t tasks = 0, rejected = 0;
    double seconds = 0;
    std::string graphJob;
};

struct TrainingRow {
    std::string id, state;
    std::int64_t roundsDone = 0, rounds = 0; // of this job (its request's train.rounds)
    double createdAt = 0, updatedAt = 0;
    std::string roundJob;             // the graph job of the round in flight; empty: none
    std::vector<RoundRow> lastRounds; // the last kDashboardRounds, oldest first
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
    std::vector<TrainingRow> training;      // the newest kDashboardTrainingJobs, newest first
    std::int64_t accessRequestsPending = 0;
    std::int64_t researchersConnected = 0;  // ready researcher connections
    std::int64_t volunteersBanned = 0;      // bans in force
    std::int64_t volunteersQuarantined = 0; // every volunteer ever caught, connected or not
};

inline constexpr int kStatusJobs = 50;
inline constexpr int kStatusVerdicts = 20;
inline constexpr int kDashboardTrainingJobs = 10;
inline constexpr int kDashboardRounds = 500;

// The newest training jobs with their last rounds (training_snapshot.cpp).
std::vector<TrainingRow> trainingRows(Database& db);

NodeSnapshot takeSnapshot(Database& db, const PeerRegistry& peers, const Scheduler& scheduler);

} // namespace goblin::labnode
