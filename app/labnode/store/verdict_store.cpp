#include "store/verdict_store.hpp"

#include <string>

namespace goblin::labnode {
namespace {

Expected<void> insertTileVerdict(Database& db, const VerdictRecord& verdict, double now) {
    auto insert =
        db.prepare("INSERT INTO results(task_id, attempt, volunteer_id, backend, verdict, method, "
                   "error_ratio, "
                   "residual, bound, reason, verify_seconds, compute_seconds, created_at, "
                   "threshold) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    insert.bind(1, verdict.task).bind(2, verdict.attempt).bind(3, verdict.volunteerId);
    insert.bind(4, verdict.backend)
        .bind(5, std::string(verdict.accepted ? "accepted" : "rejected"));
    insert.bind(6, verdict.method).bind(7, verdict.ratio).bind(8, verdict.residual);
    insert.bind(9, verdict.bound).bind(10, verdict.reason).bind(11, verdict.verifySeconds);
    insert.bind(12, verdict.computeSeconds).bind(13, now).bind(14, verdict.threshold);
    if (auto ok = insert.run(); !ok)
        return ok;
    if (!verdict.accepted)
        return {};
    auto task =
        db.prepare("UPDATE tasks SET state = 'accepted' WHERE id = ? AND state != 'accepted'");
    if (auto ok = task.bind(1, verdict.task).run(); !ok)
        return ok;
    if (db.changes() != 1)
        return makeError(ErrorCode::Internal, "task " + std::to_string(verdict.task) +
                                                  " is unknown or was already accepted");
    return {};
}

Expected<void> insertGraphVerdict(Database& db, const VerdictRecord& verdict, double now) {
    auto insert = db.prepare(
        "INSERT INTO graph_results(task_id, attempt, volunteer_id, backend, verdict, method, "
        "disagreement_ratio, reason, compute_seconds, created_at) VALUES(?,?,?,?,?,?,?,?,?,?)");
    insert.bind(1, verdict.task).bind(2, verdict.attempt).bind(3, verdict.volunteerId);
    insert.bind(4, verdict.backend)
        .bind(5, std::string(verdict.accepted ? "accepted" : "rejected"));
    insert.bind(6, verdict.method).bind(7, verdict.ratio).bind(8, verdict.reason);
    return insert.bind(9, verdict.computeSeconds).bind(10, now).run();
}

} // namespace

Expected<void> recordVerdict(Database& db, const VerdictRecord& verdict, double now) {
    auto inserted = verdict.kind == "graph" ? insertGraphVerdict(db, verdict, now)
                                            : insertTileVerdict(db, verdict, now);
    if (!inserted)
        return inserted;
    const char* counter = verdict.accepted
                              ? "UPDATE volunteers SET accepted = accepted + 1 WHERE id = ?"
                              : "UPDATE volunteers SET rejected = rejected + 1 WHERE id = ?";
    return db.prepare(counter).bind(1, verdict.volunteerId).run();
}

} // namespace goblin::labnode
