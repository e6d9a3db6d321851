// Durable records of audits of delivered graph jobs (table graph_job_audits, node_store.cpp): a
// volunteer whose accepted results a delivered job used was quarantined afterwards, and the node
// recomputes those tasks. Also the queries that find such jobs and tasks, and the retained jobs
// whose data is due for deletion. Core thread only, like NodeStore.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "goblin/core/error.hpp"
#include "goblin/net/messages/researcher_messages.hpp"
#include "store/database.hpp"

namespace goblin::labnode {

struct JobAuditRow {
    std::int64_t id = 0;
    std::string jobId;
    std::string volunteerId;
    std::string reason;
    std::string state; // rechecking, stands, corrected, unverifiable
    std::int64_t tasks = 0;
    std::int64_t corrected = 0;
    double createdAt = 0;
};

// A decided task whose outputs rest on the agreement of two volunteers, one of them `volunteer`
// (decided by that agreement, or by the node's cheap audit of it).
struct SuspectTask {
    std::int64_t taskId = 0;
    std::int64_t chunk = 0;
    std::string outputs; // stored tensors
    std::string backend; // of the volunteer's accepted replica
};

// Delivered graph jobs (done, retained or released) with an accepted replica of this volunteer
// that rests on agreement with a second volunteer (not on the node's own computation).
std::vector<std::string> deliveredJobsUsing(Database& db, const std::string& volunteerId);
std::vector<SuspectTask> suspectTasks(Database& db, const std::string& jobId,
                                      const std::string& volunteerId);
// (attempt, volunteer) of every accepted replica of a task.
std::vector<std::pair<std::int64_t, std::string>> acceptedReplicas(Database& db,
                                                                   std::int64_t taskId);

// audit_report is pushed only to researchers' connections that speak this protocol or later.
inline constexpr int kAuditReportProtocol = 2;
// A job's audit state: "clean" without audits, else the most urgent of its audits' states.
std::string jobAuditState(const std::vector<JobAuditRow>& audits);
// The report (no outputs) of a job in `state` with these audits: the newest kMaxAuditEntries.
net::AuditReport auditReport(std::int64_t requestId, const std::string& jobId,
                             const std::string& state, const std::vector<JobAuditRow>& audits);

Expected<std::int64_t> insertJobAudit(Database& db, const JobAuditRow& audit);
Expected<void> finishJobAudit(Database& db, std::int64_t id, const std::string& state,
                              std::int64_t tasks, std::int64_t corrected, double now);
Expected<void> deleteJobAudit(Database& db, std::int64_t id);
std::vector<JobAuditRow> jobAuditsOf(Database& db, const std::string& jobId);
std::vector<JobAuditRow> unfinishedJobAudits(Database& db);

// The graph jobs an audit is rechecking now (their data is read until it ends).
std::set<std::string> jobsBeingRechecked(Database& db);
// Jobs released while their data was kept for audits (state 'retained') that finished before
// `finishedBefore`, less those an audit is rechecking now.
std::vector<std::string> retainedJobsDue(Database& db, double finishedBefore);
// Whether a job's outputs rest on two volunteers' agreement anywhere (so its data is worth
// keeping).
bool usesReplicaAgreement(Database& db, const std::string& jobId);

} // namespace goblin::labnode
