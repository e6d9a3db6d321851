#include "store/job_requests.hpp"

namespace goblin::labnode {

Expected<std::int64_t> requestJobAction(Database& db, const std::string& jobId, JobAction action,
                                        double now) {
    auto insert = db.prepare("INSERT INTO job_requests(job_id, action, requested_at) VALUES "
                             "(?, ?, ?) RETURNING id");
    insert.bind(1, jobId);
    insert.bind(2, std::string(action == JobAction::Cancel ? "cancel" : "purge"));
    insert.bind(3, now);
    auto row = insert.step();
    if (!row)
        return tl::unexpected(row.error());
    if (!*row)
        return makeError(ErrorCode::Internal, "the request was not recorded");
    return insert.columnInt(0);
}

std::vector<JobRequestRow> pendingJobRequests(Database& db) {
    std::vector<JobRequestRow> rows;
    auto query =
        db.prepare("SELECT id, job_id, action FROM job_requests WHERE done_at IS NULL ORDER BY id");
    while (query.step().value_or(false))
        rows.push_back(
            JobRequestRow{query.columnInt(0), query.columnText(1),
                          query.columnText(2) == "purge" ? JobAction::Purge : JobAction::Cancel});
    return rows;
}

Expected<void> finishJobRequest(Database& db, std::int64_t id, const std::string& outcome,
                                double now) {
    auto update = db.prepare("UPDATE job_requests SET done_at = ?, outcome = ? WHERE id = ?");
    update.bind(1, now);
    update.bind(2, outcome);
    update.bind(3, id);
    return update.run();
}

std::optional<std::string> jobRequestOutcome(Database& db, std::int64_t id) {
    auto query =
        db.prepare("SELECT outcome FROM job_requests WHERE id = ? AND done_at IS NOT NULL");
    query.bind(1, id);
    if (!query.step().value_or(false))
        return std::nullopt;
    return query.columnText(0);
}

} // namespace goblin::labnode
