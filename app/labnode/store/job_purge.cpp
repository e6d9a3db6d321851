#include "store/job_purge.hpp"

#include <vector>

namespace goblin::labnode {
namespace {

// Children before parents: foreign keys are on.
const std::vector<const char*> kMatmulRows{
    "DELETE FROM results WHERE task_id IN (SELECT id FROM tasks WHERE job_id = ?1)",
    "DELETE FROM leases WHERE task_id IN (SELECT id FROM tasks WHERE job_id = ?1)",
    "DELETE FROM task_leases WHERE kind = 'matmul' AND task_id IN (SELECT id FROM tasks WHERE "
    "job_id = ?1)",
    "DELETE FROM lease_losses WHERE kind = 'matmul' AND task_id IN (SELECT id FROM tasks WHERE "
    "job_id = ?1)",
    "DELETE FROM tasks WHERE job_id = ?1",
    "DELETE FROM jobs WHERE id = ?1"};
const std::vector<const char*> kGraphRows{
    "DELETE FROM graph_results WHERE task_id IN (SELECT id FROM graph_tasks WHERE job_id = ?1)",
    "DELETE FROM task_leases WHERE kind = 'graph' AND task_id IN (SELECT id FROM graph_tasks "
    "WHERE job_id = ?1)",
    "DELETE FROM lease_losses WHERE kind = 'graph' AND task_id IN (SELECT id FROM graph_tasks "
    "WHERE job_id = ?1)",
    "DELETE FROM graph_job_audits WHERE job_id = ?1",
    "DELETE FROM graph_tasks WHERE job_id = ?1",
    "DELETE FROM graph_jobs WHERE id = ?1"};
const std::vector<const char*> kTrainRows{"DELETE FROM train_batches WHERE job_id = ?1",
                                          "DELETE FROM train_snapshots WHERE job_id = ?1",
                                          "DELETE FROM train_rewinds WHERE job_id = ?1",
                                          "DELETE FROM train_late_catches WHERE job_id = ?1",
                                          "DELETE FROM train_rounds WHERE job_id = ?1",
                                          "DELETE FROM train_jobs WHERE id = ?1"};

} // namespace

Expected<void> purgeJobRows(Database& db, std::string_view kind, const std::string& jobId) {
    const auto& statements = kind == "matmul"  ? kMatmulRows
                             : kind == "graph" ? kGraphRows
                                               : kTrainRows;
    auto transaction = Transaction::begin(db);
    if (!transaction)
        return tl::unexpected(transaction.error());
    for (const char* sql : statements) {
        auto statement = db.prepare(sql);
        statement.bind(1, jobId);
        if (auto ok = statement.run(); !ok)
            return ok;
    }
    return transaction->commit();
}

} // namespace goblin::labnode
