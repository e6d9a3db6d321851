#include "staff/job_listing.hpp"

namespace goblin::labnode {
namespace {

constexpr const char* kJobs =
    "SELECT * FROM ("
    "SELECT j.id AS id, 'matmul' AS kind, j.state, coalesce(r.email, ''), "
    "(SELECT count(*) FROM tasks t WHERE t.job_id = j.id), "
    "(SELECT count(*) FROM tasks t WHERE t.job_id = j.id AND t.state = 'accepted'), "
    "j.created_at, coalesce(j.finished_at, 0) AS finished_at, j.researcher_id AS researcher_id, "
    "'' AS owner, 0 "
    "FROM jobs j LEFT JOIN researchers r ON r.id = j.researcher_id "
    "UNION ALL "
    "SELECT g.id, 'graph', g.state, coalesce(r.email, ''), g.tasks, "
    "(SELECT count(*) FROM graph_tasks t WHERE t.job_id = g.id AND t.state = 'accepted'), "
    "g.created_at, coalesce(g.finished_at, 0), g.researcher_id, coalesce(g.owner_job, ''), "
    "coalesce(g.owner_round, 0) "
    "FROM graph_jobs g LEFT JOIN researchers r ON r.id = g.researcher_id "
    "UNION ALL "
    "SELECT t.id, 'train', t.state, coalesce(r.email, ''), "
    "coalesce(json_extract(t.request, '$.train.rounds'), 0), t.rounds_done, t.created_at, "
    "CASE WHEN t.state = 'running' THEN 0 ELSE t.updated_at END, t.researcher_id, '', 0 "
    "FROM train_jobs t LEFT JOIN researchers r ON r.id = t.researcher_id) ";

JobListing readJob(const ScopedStatement& query) {
    return JobListing{query.columnText(0),   query.columnText(1),
                      query.columnText(2),   query.columnText(3),
                      query.columnInt(4),    query.columnInt(5),
                      query.columnDouble(6), query.columnDouble(7),
                      query.columnInt(8),    GroupOwner{query.columnText(9), query.columnInt(10)}};
}

std::int64_t countOf(Database& db, const char* sql) {
    auto query = db.prepare(sql);
    return query.step().value_or(false) ? query.columnInt(0) : 0;
}

} // namespace

std::vector<JobListing> listJobs(Database& db) {
    auto query = db.prepare(std::string(kJobs) + "WHERE owner = '' ORDER BY 7 DESC, 1");
    std::vector<JobListing> jobs;
    while (query.step().value_or(false))
        jobs.push_back(readJob(query));
    return jobs;
}

std::vector<JobListing> listJobsOf(Database& db, std::int64_t researcherId, std::size_t limit) {
    auto query = db.prepare(std::string(kJobs) +
                            "WHERE researcher_id = ?1 AND owner = '' ORDER BY 7 DESC, 1 LIMIT ?2");
    query.bind(1, researcherId);
    query.bind(2, static_cast<std::int64_t>(limit));
    std::vector<JobListing> jobs;
    while (query.step().value_or(false))
        jobs.push_back(readJob(query));
    return jobs;
}

std::optional<JobListing> findJob(Database& db, const std::string& id) {
    auto query = db.prepare(std::string(kJobs) + "WHERE id = ?");
    query.bind(1, id);
    if (!query.step().value_or(false))
        return std::nullopt;
    return readJob(query);
}

JobResultCounts jobResultCounts(Database& db, const JobListing& job) {
    constexpr const char* kCounts = "SELECT coalesce(sum(r.verdict = 'accepted'), 0), "
                                    "coalesce(sum(r.verdict = 'rejected'), 0), "
                                    "count(DISTINCT r.volunteer_id) ";
    // A training job's results are those of its committed rounds' graph jobs.
    const std::string from =
        job.kind == "graph" ? "FROM graph_results r JOIN graph_tasks t ON t.id = r.task_id "
                              "WHERE t.job_id = ?"
        : job.kind == "train"
            ? "FROM graph_results r JOIN graph_tasks t ON t.id = r.task_id JOIN train_rounds "
              "w ON w.graph_job = t.job_id WHERE w.job_id = ?"
            : "FROM results r JOIN tasks t ON t.id = r.task_id WHERE t.job_id = ?";
    auto query = db.prepare(std::string(kCounts) + from);
    query.bind(1, job.id);
    if (!query.step().value_or(false))
        return {};
    return JobResultCounts{query.columnInt(0), query.columnInt(1), query.columnInt(2)};
}

std::vector<std::string> finishedJobsBefore(Database& db, double before, std::size_t limit) {
    auto query =
        db.prepare(std::string(kJobs) +
                   "WHERE state IN ('done', 'failed', 'cancelled') AND finished_at > 0 AND "
                   "finished_at < ?1 AND owner = '' ORDER BY finished_at LIMIT ?2");
    query.bind(1, before);
    query.bind(2, static_cast<std::int64_t>(limit));
    std::vector<std::string> jobs;
    while (query.step().value_or(false))
        jobs.push_back(query.columnText(0));
    return jobs;
}

NodeCounts countNode(Database& db) {
    NodeCounts counts;
    auto states = db.prepare("SELECT state, count(*) FROM (SELECT state FROM jobs UNION ALL "
                             "SELECT state FROM graph_jobs WHERE owner_job IS NULL UNION ALL "
                             "SELECT state FROM train_jobs) GROUP BY state ORDER BY state");
    while (states.step().value_or(false))
        counts.jobsByState.emplace_back(states.columnText(0), states.columnInt(1));
    counts.volunteers = countOf(db, "SELECT count(*) FROM volunteers");
    counts.banned = countOf(db, "SELECT count(*) FROM volunteer_bans WHERE lifted_at IS NULL");
    counts.quarantined =
        countOf(db, "SELECT count(*) FROM volunteer_trust WHERE quarantined_at IS NOT NULL");
    counts.researchers = countOf(db, "SELECT count(*) FROM researchers");
    counts.activeResearchers =
        countOf(db, "SELECT count(*) FROM researchers r WHERE NOT EXISTS (SELECT 1 FROM "
                    "researcher_revocations v WHERE v.researcher_id = r.id)");
    return counts;
}

} // namespace goblin::labnode
