#include "kinds/graph/graph_store.hpp"

namespace goblin::labnode {

Expected<void> insertGraphJob(Database& db, const GraphJobRow& job) {
    auto insert = db.prepare("INSERT INTO graph_jobs(id, researcher_id, tasks, request, inputs, "
                             "state, created_at, owner_job, owner_round) "
                             "VALUES(?,?,?,?,?,'running',?,nullif(?, ''),?)");
    insert.bind(1, job.id).bind(2, job.researcherId).bind(3, job.tasks).bind(4, job.request);
    insert.bind(5, job.inputs).bind(6, job.createdAt).bind(7, job.owner.job);
    if (job.owner.owned())
        insert.bind(8, job.owner.round);
    return insert.run();
}

Expected<std::int64_t> insertGraphTask(Database& db, const std::string& jobId, std::int64_t chunk) {
    auto insert = db.prepare("INSERT INTO graph_tasks(job_id, chunk) VALUES(?,?) RETURNING id");
    insert.bind(1, jobId).bind(2, chunk);
    auto row = insert.step();
    if (!row)
        return tl::unexpected(row.error());
    if (!*row)
        return makeError(ErrorCode::Internal, "inserting a graph task returned no id");
    return insert.columnInt(0);
}

Expected<void> setGraphTaskAccepted(Database& db, std::int64_t taskId, const std::string& outputs) {
    auto update = db.prepare("UPDATE graph_tasks SET state = 'accepted', outputs = ? "
                             "WHERE id = ? AND state != 'accepted'");
    if (auto ok = update.bind(1, outputs).bind(2, taskId).run(); !ok)
        return ok;
    if (db.changes() != 1)
        return makeError(ErrorCode::Internal,
                         "graph task " + std::to_string(taskId) + " was already accepted");
    return {};
}

Expected<void> setGraphTaskQueued(Database& db, std::int64_t taskId) {
    auto update =
        db.prepare("UPDATE graph_tasks SET state = 'queued', outputs = NULL WHERE id = ?");
    return update.bind(1, taskId).run();
}

Expected<std::vector<GraphTaskRow>> insertGraphTasks(Database& db, const std::string& jobId,
                                                     std::int64_t count) {
    std::vector<GraphTaskRow> rows;
    for (std::int64_t chunk = 0; chunk < count; ++chunk) {
        auto taskId = insertGraphTask(db, jobId, chunk);
        if (!taskId)
            return tl::unexpected(taskId.error());
        rows.push_back(GraphTaskRow{*taskId, chunk, false, {}, 0});
    }
    return rows;
}

Expected<std::vector<GraphTaskRow>> replanGraphTasks(Database& db, const std::string& jobId,
                                                     const std::string& request,
                                                     std::int64_t tasks) {
    auto transaction = Transaction::begin(db);
    if (!transaction)
        return tl::unexpected(transaction.error());
    auto results = db.prepare("SELECT count(*) FROM graph_results WHERE task_id IN "
                              "(SELECT id FROM graph_tasks WHERE job_id = ?)");
    results.bind(1, jobId);
    if (auto row = results.step(); !row || !*row || results.columnInt(0) != 0)
        return makeError(ErrorCode::Internal, "a task of job " + jobId + " has results already");
    for (const char* sql :
         {"DELETE FROM task_leases WHERE kind = 'graph' AND task_id IN (SELECT id FROM "
          "graph_tasks WHERE job_id = ?)",
          "DELETE FROM lease_losses WHERE kind = 'graph' AND task_id IN (SELECT id FROM "
          "graph_tasks WHERE job_id = ?)",
          "DELETE FROM graph_tasks WHERE job_id = ?"})
        if (auto ok = db.prepare(sql).bind(1, jobId).run(); !ok)
            return tl::unexpected(ok.error());
    auto update = db.prepare("UPDATE graph_jobs SET tasks = ?, request = ? WHERE id = ?");
    if (auto ok = update.bind(1, tasks).bind(2, request).bind(3, jobId).run(); !ok)
        return tl::unexpected(ok.error());
    auto rows = insertGraphTasks(db, jobId, tasks);
    if (!rows)
        return tl::unexpected(rows.error());
    if (auto ok = transaction->commit(); !ok)
        return tl::unexpected(ok.error());
    return rows;
}

Expected<std::string> replaceGraphTaskOutputs(Database& db, std::int64_t taskId,
                                              const std::string& outputs) {
    auto current =
        db.prepare("SELECT outputs FROM graph_tasks WHERE id = ? AND state = 'accepted'");
    current.bind(1, taskId);
    auto found = current.step();
    if (!found)
        return tl::unexpected(found.error()); // the database's own error, not "not decided"
    if (!*found)
        return makeError(ErrorCode::Internal,
                         "graph task " + std::to_string(taskId) + " is not decided");
    std::string replaced = current.columnText(0);
    auto update = db.prepare("UPDATE graph_tasks SET outputs = ? WHERE id = ?");
    if (auto ok = update.bind(1, outputs).bind(2, taskId).run(); !ok)
        return tl::unexpected(ok.error());
    return replaced;
}

Expected<void> overturnGraphVerdict(Database& db, std::int64_t taskId, std::int64_t attempt,
                                    const std::string& volunteerId, const std::string& method,
                                    const std::string& reason) {
    auto update =
        db.prepare("UPDATE graph_results SET verdict = 'rejected', method = ?, "
                   "reason = ? WHERE task_id = ? AND attempt = ? AND verdict = 'accepted'");
    update.bind(1, method).bind(2, reason).bind(3, taskId).bind(4, attempt);
    if (auto ok = update.run(); !ok)
        return ok;
    if (db.changes() != 1)
        return {};
    return db
        .prepare("UPDATE volunteers SET accepted = accepted - 1, rejected = rejected + 1 "
                 "WHERE id = ?")
        .bind(1, volunteerId)
        .run();
}

Expected<void> setGraphJobState(Database& db, const std::string& id, JobState state, double now) {
    auto update =
        db.prepare("UPDATE graph_jobs SET state = ?, finished_at = coalesce(finished_at, ?) "
                   "WHERE id = ?");
    return update.bind(1, jobStateName(state)).bind(2, now).bind(3, id).run();
}

namespace {

constexpr const char* kGraphJobColumns =
    "SELECT id, researcher_id, state, tasks, request, inputs, created_at, coalesce(owner_job, ''), "
    "coalesce(owner_round, 0) FROM graph_jobs ";

GraphJobRow readGraphJob(const ScopedStatement& query) {
    return GraphJobRow{query.columnText(0),
                       query.columnInt(1),
                       storedJobState(query.columnText(2)),
                       query.columnInt(3),
                       query.columnText(4),
                       query.columnText(5),
                       query.columnDouble(6),
                       GroupOwner{query.columnText(7), query.columnInt(8)}};
}

} // namespace

std::optional<GraphJobRow> graphJob(Database& db, const std::string& id) {
    auto query = db.prepare(std::string(kGraphJobColumns) + "WHERE id = ?");
    query.bind(1, id);
    if (!query.step().value_or(false))
        return std::nullopt;
    return readGraphJob(query);
}

std::vector<GraphJobRow> unreleasedGraphJobs(Database& db) {
    auto query = db.prepare(std::string(kGraphJobColumns) +
                            "WHERE state IN ('running', 'done') ORDER BY created_at");
    std::vector<GraphJobRow> jobs;
    while (query.step().value_or(false))
        jobs.push_back(readGraphJob(query));
    return jobs;
}

std::vector<std::string> graphJobsOwnedBy(Database& db, const std::string& ownerJob) {
    auto query =
        db.prepare("SELECT id FROM graph_jobs WHERE owner_job = ? ORDER BY created_at, id");
    query.bind(1, ownerJob);
    std::vector<std::string> ids;
    while (query.step().value_or(false))
        ids.push_back(query.columnText(0));
    return ids;
}

std::vector<GraphTaskRow> graphTasksOf(Database& db, const std::string& jobId) {
    auto query = db.prepare(
        "SELECT t.id, t.chunk, t.state = 'accepted', coalesce(t.outputs, ''), "
        "max(coalesce((SELECT max(attempt) FROM graph_results r WHERE r.task_id = t.id), 0), "
        "coalesce((SELECT max(attempt) FROM task_leases l WHERE l.kind = 'graph' AND "
        "l.task_id = t.id), 0)) "
        "FROM graph_tasks t WHERE t.job_id = ? ORDER BY t.chunk");
    query.bind(1, jobId);
    std::vector<GraphTaskRow> tasks;
    while (query.step().value_or(false))
        tasks.push_back(GraphTaskRow{query.columnInt(0), query.columnInt(1),
                                     query.columnInt(2) != 0, query.columnText(3),
                                     query.columnInt(4)});
    return tasks;
}

GraphSummaryCounts graphSummaryCounts(Database& db, const std::string& jobId) {
    GraphSummaryCounts counts;
    auto totals = db.prepare(
        "SELECT coalesce(sum(r.verdict = 'accepted'), 0), coalesce(sum(r.verdict = 'rejected'), "
        "0), "
        "count(DISTINCT CASE WHEN r.verdict = 'accepted' THEN r.volunteer_id END), "
        "count(DISTINCT CASE WHEN r.method = 'node-audit' THEN r.task_id END), "
        "count(DISTINCT CASE WHEN r.method = 'node-audit' AND r.verdict = 'rejected' THEN "
        "r.task_id END), "
        "count(DISTINCT CASE WHEN r.method IN ('node-tiebreak', 'node-compute') THEN r.task_id "
        "END), "
        "coalesce(max(CASE WHEN r.verdict = 'accepted' THEN r.disagreement_ratio END), 0) "
        "FROM graph_results r JOIN graph_tasks t ON t.id = r.task_id WHERE t.job_id = ?");
    totals.bind(1, jobId);
    if (totals.step().value_or(false)) {
        counts.accepted = totals.columnInt(0);
        counts.rejected = totals.columnInt(1);
        counts.volunteers = totals.columnInt(2);
        counts.audited = totals.columnInt(3);
        counts.caught = totals.columnInt(4);
        counts.tiebreaks = totals.columnInt(5);
        counts.worstRatio = totals.columnDouble(6);
    }
    auto backends = db.prepare(
        "SELECT r.backend, count(*) FROM graph_results r JOIN graph_tasks t ON t.id = r.task_id "
        "WHERE t.job_id = ? AND r.verdict = 'accepted' GROUP BY r.backend");
    backends.bind(1, jobId);
    while (backends.step().value_or(false))
        counts.backends.emplace_back(backends.columnText(0), backends.columnInt(1));
    // Tasks the node decided itself carry its reference computation.
    if (const auto decided = counts.audited + counts.tiebreaks; decided > 0)
        counts.backends.emplace_back("node-reference", decided);
    return counts;
}

} // namespace goblin::labnode
