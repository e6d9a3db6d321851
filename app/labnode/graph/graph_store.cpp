#include "graph_store.hpp"

namespace goblin::labnode {

Expected<void> insertGraphJob(Database& db, const std::string& id, std::int64_t researcher,
                              std::int64_t tasks, double now) {
    auto insert = db.prepare("INSERT INTO graph_jobs(id, researcher_id, tasks, state, created_at) "
                             "VALUES(?,?,?,'running',?)");
    return insert.bind(1, id).bind(2, researcher).bind(3, tasks).bind(4, now).run();
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

Expected<void> recordGraphVerdict(Database& db, const GraphVerdictRecord& verdict, double now) {
    auto insert = db.prepare(
        "INSERT INTO graph_results(task_id, attempt, volunteer_id, backend, verdict, method, "
        "disagreement_ratio, reason, compute_seconds, created_at) VALUES(?,?,?,?,?,?,?,?,?,?)");
    insert.bind(1, verdict.taskId).bind(2, verdict.attempt).bind(3, verdict.volunteerId);
    insert.bind(4, verdict.backend).bind(5, std::string(verdict.accepted ? "accepted" : "rejected"));
    insert.bind(6, verdict.method).bind(7, verdict.ratio).bind(8, verdict.reason);
    insert.bind(9, verdict.computeSeconds).bind(10, now);
    if (auto ok = insert.run(); !ok)
        return ok;
    const char* counter = verdict.accepted
                              ? "UPDATE volunteers SET accepted = accepted + 1 WHERE id = ?"
                              : "UPDATE volunteers SET rejected = rejected + 1 WHERE id = ?";
    return db.prepare(counter).bind(1, verdict.volunteerId).run();
}

Expected<void> setGraphTaskAccepted(Database& db, std::int64_t taskId) {
    auto update = db.prepare("UPDATE graph_tasks SET state = 'accepted' WHERE id = ? AND state != 'accepted'");
    if (auto ok = update.bind(1, taskId).run(); !ok)
        return ok;
    if (db.changes() != 1)
        return makeError(ErrorCode::Internal,
                         "graph task " + std::to_string(taskId) + " was already accepted");
    return {};
}

Expected<void> setGraphJobState(Database& db, const std::string& id, const std::string& state,
                                double now) {
    auto update = db.prepare("UPDATE graph_jobs SET state = ?, finished_at = coalesce(finished_at, ?) "
                             "WHERE id = ?");
    return update.bind(1, state).bind(2, now).bind(3, id).run();
}

std::optional<GraphJobRow> graphJob(Database& db, const std::string& id) {
    auto query = db.prepare("SELECT id, researcher_id, state FROM graph_jobs WHERE id = ?");
    query.bind(1, id);
    if (!query.step().value_or(false))
        return std::nullopt;
    return GraphJobRow{query.columnText(0), query.columnInt(1), query.columnText(2)};
}

std::int64_t failInterruptedGraphJobs(Database& db, double now) {
    auto update = db.prepare("UPDATE graph_jobs SET state = 'failed', finished_at = ? "
                             "WHERE state = 'running'");
    if (!update.bind(1, now).run())
        return 0;
    return db.changes();
}

} // namespace goblin::labnode
