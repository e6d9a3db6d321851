#include "store/lease_store.hpp"

#include <optional>

namespace goblin::labnode {

namespace {

std::optional<LeaseLoss> leaseLossNamed(std::string_view name) {
    for (LeaseLoss why :
         {LeaseLoss::Expired, LeaseLoss::Disconnected, LeaseLoss::TaskError, LeaseLoss::NotSent})
        if (leaseLossName(why) == name)
            return why;
    return std::nullopt;
}

} // namespace

Expected<void> recordLease(Database& db, const LeaseRecord& lease) {
    auto insert = db.prepare("INSERT INTO task_leases(kind, task_id, attempt, volunteer_id, "
                             "leased_at, deadline) VALUES(?,?,?,?,?,?)");
    insert.bind(1, lease.kind).bind(2, lease.task).bind(3, lease.attempt);
    return insert.bind(4, lease.volunteerId).bind(5, lease.leasedAt).bind(6, lease.deadline).run();
}

std::string_view leaseLossName(LeaseLoss why) {
    switch (why) {
    case LeaseLoss::Expired:
        return "expired";
    case LeaseLoss::Disconnected:
        return "disconnected";
    case LeaseLoss::TaskError:
        return "task_error";
    case LeaseLoss::NotSent:
        return "not_sent";
    }
    return "?";
}

Expected<void> recordLeaseLoss(Database& db, const LeaseLossRecord& loss) {
    auto insert = db.prepare("INSERT OR IGNORE INTO lease_losses(kind, task_id, attempt, "
                             "volunteer_id, why, at) VALUES(?,?,?,?,?,?)");
    insert.bind(1, loss.kind).bind(2, loss.task).bind(3, loss.attempt).bind(4, loss.volunteerId);
    return insert.bind(5, leaseLossName(loss.why)).bind(6, loss.at).run();
}

Expected<void> forgetFinishedLeaseLosses(Database& db) {
    return db
        .prepare("DELETE FROM lease_losses WHERE (kind = 'graph' AND task_id IN (SELECT t.id FROM "
                 "graph_tasks t JOIN graph_jobs j ON j.id = t.job_id WHERE j.state != 'running')) "
                 "OR (kind = 'matmul' AND task_id IN (SELECT t.id FROM tasks t JOIN jobs j ON "
                 "j.id = t.job_id WHERE j.state != 'running'))")
        .run();
}

std::vector<LeaseLossRecord> leaseLosses(Database& db) {
    std::vector<LeaseLossRecord> losses;
    auto query = db.prepare("SELECT kind, task_id, attempt, volunteer_id, why, at FROM "
                            "lease_losses ORDER BY at, rowid");
    while (query.step().value_or(false)) {
        const auto why = leaseLossNamed(query.columnText(4));
        if (!why)
            continue;
        losses.push_back(LeaseLossRecord{query.columnText(0), query.columnInt(1),
                                         query.columnInt(2), query.columnText(3), *why,
                                         query.columnDouble(5)});
    }
    return losses;
}

} // namespace goblin::labnode
