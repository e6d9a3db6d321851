#include "kinds/graph/job_audit_store.hpp"

#include <algorithm>

namespace goblin::labnode {

std::string jobAuditState(const std::vector<JobAuditRow>& audits) {
    if (audits.empty())
        return "clean";
    for (const char* state : {"rechecking", "unverifiable", "corrected"})
        if (std::any_of(audits.begin(), audits.end(),
                        [&](const JobAuditRow& audit) { return audit.state == state; }))
            return state;
    return "stands";
}

net::AuditReport auditReport(std::int64_t requestId, const std::string& jobId,
                             const std::string& state, const std::vector<JobAuditRow>& audits) {
    net::AuditReport report{requestId, jobId, state, {}, {}};
    // The newest audits, if a job ever had more than a report carries.
    const std::size_t first =
        audits.size() > net::kMaxAuditEntries ? audits.size() - net::kMaxAuditEntries : 0;
    for (std::size_t i = first; i < audits.size(); ++i) {
        const JobAuditRow& audit = audits[i];
        report.audits.push_back(net::JobAuditEntry{audit.volunteerId, audit.reason, audit.state,
                                                   audit.tasks, audit.corrected, audit.createdAt});
    }
    return report;
}

namespace {

constexpr const char* kAuditColumns =
    "SELECT id, job_id, volunteer_id, reason, state, tasks, corrected, created_at "
    "FROM graph_job_audits ";

// A volunteer's accepted result that rests on two volunteers' agreement: decided by the agreement
// alone, or by the node's cheap audit of the agreed outputs, which passes a matmul value within its
// rounding bound. A later quarantine of either volunteer rechecks it. A task checked alone (one
// accepted result, verification="freivalds") rests on no one's agreement.
constexpr const char* kAgreedResult =
    "r.verdict = 'accepted' AND r.method IN ('replica-agreement', 'node-audit') AND "
    "(SELECT count(*) FROM graph_results o WHERE o.task_id = r.task_id AND "
    "o.verdict = 'accepted') >= 2 ";

template <class Query> JobAuditRow readAudit(const Query& query) {
    return JobAuditRow{query.columnInt(0),  query.columnText(1),  query.columnText(2),
                       query.columnText(3), query.columnText(4),  query.columnInt(5),
                       query.columnInt(6),  query.columnDouble(7)};
}

template <class Query> std::vector<JobAuditRow> readAudits(Query& query) {
    std::vector<JobAuditRow> audits;
    while (query.step().value_or(false))
        audits.push_back(readAudit(query));
    return audits;
}

} // namespace

std::vector<std::string> deliveredJobsUsing(Database& db, const std::string& volunteerId) {
    auto query = db.prepare(
        "SELECT DISTINCT j.id FROM graph_results r JOIN graph_tasks t ON t.id = r.task_id "
        "JOIN graph_jobs j ON j.id = t.job_id WHERE r.volunteer_id = ? AND " +
        std::string(kAgreedResult) +
        "AND j.state IN ('done', 'retained', 'released') ORDER BY j.created_at");
    query.bind(1, volunteerId);
    std::vector<std::string> jobs;
    while (query.step().value_or(false))
        jobs.push_back(query.columnText(0));
    return jobs;
}

std::vector<SuspectTask> suspectTasks(Database& db, const std::string& jobId,
                                      const std::string& volunteerId) {
    auto query = db.prepare(
        "SELECT t.id, t.chunk, coalesce(t.outputs, ''), coalesce(r.backend, '') "
        "FROM graph_results r JOIN graph_tasks t ON t.id = r.task_id WHERE t.job_id = ? AND "
        "r.volunteer_id = ? AND " +
        std::string(kAgreedResult) + "ORDER BY t.chunk");
    query.bind(1, jobId).bind(2, volunteerId);
    std::vector<SuspectTask> tasks;
    while (query.step().value_or(false))
        tasks.push_back(SuspectTask{query.columnInt(0), query.columnInt(1), query.columnText(2),
                                    query.columnText(3)});
    return tasks;
}

std::vector<std::pair<std::int64_t, std::string>> acceptedReplicas(Database& db,
                                                                   std::int64_t taskId) {
    auto query = db.prepare("SELECT attempt, volunteer_id FROM graph_results WHERE task_id = ? "
                            "AND verdict = 'accepted' ORDER BY attempt");
    query.bind(1, taskId);
    std::vector<std::pair<std::int64_t, std::string>> replicas;
    while (query.step().value_or(false))
        replicas.emplace_back(query.columnInt(0), query.columnText(1));
    return replicas;
}

Expected<std::int64_t> insertJobAudit(Database& db, const JobAuditRow& audit) {
    auto insert =
        db.prepare("INSERT INTO graph_job_audits(job_id, volunteer_id, reason, state, tasks, "
                   "corrected, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id");
    insert.bind(1, audit.jobId)
        .bind(2, audit.volunteerId)
        .bind(3, audit.reason)
        .bind(4, audit.state)
        .bind(5, audit.tasks)
        .bind(6, audit.corrected)
        .bind(7, audit.createdAt);
    auto row = insert.step();
    if (!row)
        return tl::unexpected(row.error());
    if (!*row)
        return makeError(ErrorCode::Internal, "inserting a job audit returned no id");
    return insert.columnInt(0);
}

Expected<void> finishJobAudit(Database& db, std::int64_t id, const std::string& state,
                              std::int64_t tasks, std::int64_t corrected, double now) {
    return db
        .prepare("UPDATE graph_job_audits SET state = ?, tasks = ?, corrected = ?, "
                 "finished_at = ? WHERE id = ?")
        .bind(1, state)
        .bind(2, tasks)
        .bind(3, corrected)
        .bind(4, now)
        .bind(5, id)
        .run();
}

Expected<void> deleteJobAudit(Database& db, std::int64_t id) {
    return db.prepare("DELETE FROM graph_job_audits WHERE id = ?").bind(1, id).run();
}

std::vector<JobAuditRow> jobAuditsOf(Database& db, const std::string& jobId) {
    auto query = db.prepare(std::string(kAuditColumns) + "WHERE job_id = ? ORDER BY id");
    query.bind(1, jobId);
    return readAudits(query);
}

std::vector<JobAuditRow> unfinishedJobAudits(Database& db) {
    auto query = db.prepare(std::string(kAuditColumns) + "WHERE state = 'rechecking' ORDER BY id");
    return readAudits(query);
}

std::set<std::string> jobsBeingRechecked(Database& db) {
    auto query = db.prepare("SELECT DISTINCT job_id FROM graph_job_audits WHERE state = "
                            "'rechecking'");
    std::set<std::string> jobs;
    while (query.step().value_or(false))
        jobs.insert(query.columnText(0));
    return jobs;
}

std::vector<std::string> retainedJobsDue(Database& db, double finishedBefore) {
    const std::set<std::string> rechecking = jobsBeingRechecked(db);
    auto query = db.prepare("SELECT id FROM graph_jobs WHERE state = 'retained' AND "
                            "coalesce(finished_at, 0) < ? ORDER BY finished_at");
    query.bind(1, finishedBefore);
    std::vector<std::string> jobs;
    while (query.step().value_or(false))
        if (std::string id = query.columnText(0); !rechecking.contains(id))
            jobs.push_back(std::move(id));
    return jobs;
}

bool usesReplicaAgreement(Database& db, const std::string& jobId) {
    auto query = db.prepare("SELECT 1 FROM graph_results r JOIN graph_tasks t ON t.id = "
                            "r.task_id WHERE t.job_id = ? AND " +
                            std::string(kAgreedResult) + "LIMIT 1");
    query.bind(1, jobId);
    return query.step().value_or(false);
}

} // namespace goblin::labnode
