#include "kinds/train/train_store.hpp"

#include <algorithm>
#include <set>

#include "kinds/graph/job_audit_store.hpp"

namespace goblin::labnode {
namespace {

constexpr const char* kJobColumns =
    "SELECT id, researcher_id, state, request, inputs, params, rounds_done, "
    "coalesce(round_job, ''), coalesce(error, ''), created_at FROM train_jobs ";

template <class Query> TrainJobRow readJob(const Query& query) {
    return TrainJobRow{
        query.columnText(0),  query.columnInt(1),  storedJobState(query.columnText(2)),
        query.columnText(3),  query.columnText(4), query.columnText(5),
        query.columnInt(6),   query.columnText(7), query.columnText(8),
        query.columnDouble(9)};
}

} // namespace

Expected<void> insertTrainJob(Database& db, const TrainJobRow& job, double now) {
    auto insert = db.prepare("INSERT INTO train_jobs(id, researcher_id, state, request, inputs, "
                             "params, created_at, updated_at) VALUES(?,?,'running',?,?,?,?,?)");
    insert.bind(1, job.id).bind(2, job.researcherId).bind(3, job.request).bind(4, job.inputs);
    return insert.bind(5, job.params).bind(6, job.createdAt).bind(7, now).run();
}

Expected<void> setTrainRoundJob(Database& db, const std::string& id, const std::string& graphJob,
                                double now) {
    return db.prepare("UPDATE train_jobs SET round_job = ?, updated_at = ? WHERE id = ?")
        .bind(1, graphJob)
        .bind(2, now)
        .bind(3, id)
        .run();
}

Expected<void> commitTrainRound(Database& db, const std::string& id, const TrainRoundRow& round,
                                const std::string& params, JobState state, double now) {
    auto insert = db.prepare(
        "INSERT INTO train_rounds(job_id, round, loss, grad_norm, tasks, rejected, node_audited, "
        "node_decided, seconds, verification_seconds, graph_job) VALUES(?,?,?,?,?,?,?,?,?,?,?)");
    insert.bind(1, id).bind(2, round.round).bind(3, round.loss).bind(4, round.gradNorm);
    insert.bind(5, round.tasks).bind(6, round.rejected).bind(7, round.nodeAudited);
    insert.bind(8, round.nodeDecided).bind(9, round.seconds).bind(10, round.verificationSeconds);
    insert.bind(11, round.graphJob);
    if (auto ok = insert.run(); !ok)
        return ok;
    return db
        .prepare("UPDATE train_jobs SET params = ?, rounds_done = rounds_done + 1, "
                 "round_job = NULL, state = ?, updated_at = ? WHERE id = ?")
        .bind(1, params)
        .bind(2, jobStateName(state))
        .bind(3, now)
        .bind(4, id)
        .run();
}

Expected<void> setTrainJobState(Database& db, const std::string& id, JobState state,
                                const std::string& error, double now) {
    return db.prepare("UPDATE train_jobs SET state = ?, error = ?, updated_at = ? WHERE id = ?")
        .bind(1, jobStateName(state))
        .bind(2, error)
        .bind(3, now)
        .bind(4, id)
        .run();
}

std::optional<TrainJobRow> trainJob(Database& db, const std::string& id) {
    auto query = db.prepare(std::string(kJobColumns) + "WHERE id = ?");
    query.bind(1, id);
    if (!query.step().value_or(false))
        return std::nullopt;
    return readJob(query);
}

std::vector<TrainJobRow> unreleasedTrainJobs(Database& db) {
    auto query = db.prepare(std::string(kJobColumns) +
                            "WHERE state IN ('running', 'done', 'failed', 'cancelled') "
                            "ORDER BY "
                            "created_at");
    std::vector<TrainJobRow> jobs;
    while (query.step().value_or(false))
        jobs.push_back(readJob(query));
    return jobs;
}

bool anyRoundKeptForAudits(Database& db, const std::string& id) {
    auto query = db.prepare("SELECT 1 FROM train_rounds r JOIN graph_jobs g ON g.id = r.graph_job "
                            "WHERE r.job_id = ? AND g.state = 'retained' LIMIT 1");
    query.bind(1, id);
    return query.step().value_or(false);
}

std::vector<std::string> retainedTrainJobsDue(Database& db, double endedBefore) {
    auto query =
        db.prepare("SELECT id FROM train_jobs WHERE state = 'retained' AND updated_at < ? AND id "
                   "NOT IN (SELECT job_id FROM train_late_catches WHERE ended_at IS NULL)");
    query.bind(1, endedBefore);
    std::vector<std::string> ended;
    while (query.step().value_or(false))
        ended.push_back(query.columnText(0));
    // A round whose graph job an audit is rechecking keeps the job's states: the recheck may
    // rewind to them.
    const std::set<std::string> rechecking = jobsBeingRechecked(db);
    std::vector<std::string> jobs;
    for (std::string& id : ended) {
        const std::vector<TrainRoundRow> rounds = trainRounds(db, id);
        if (std::none_of(rounds.begin(), rounds.end(), [&](const TrainRoundRow& round) {
                return rechecking.contains(round.graphJob);
            }))
            jobs.push_back(std::move(id));
    }
    return jobs;
}

namespace {

std::vector<TrainRoundRow> roundRows(Database& db, const std::string& id, const char* order) {
    // A round trained again after a rewind says why (rewind_store.hpp, whyRedone).
    std::string sql =
        "SELECT round, loss, grad_norm, tasks, rejected, node_audited, node_decided, seconds, "
        "verification_seconds, graph_job, coalesce((SELECT w.reason FROM train_rewinds w WHERE "
        "w.job_id = r.job_id AND w.first_round <= r.round AND w.end_round > r.round ORDER BY "
        "w.rowid DESC LIMIT 1), '') FROM train_rounds r WHERE job_id = ? ";
    sql.append(order);
    auto query = db.prepare(sql);
    query.bind(1, id);
    std::vector<TrainRoundRow> rounds;
    while (query.step().value_or(false))
        rounds.push_back(TrainRoundRow{
            query.columnInt(0), query.columnDouble(1), query.columnDouble(2), query.columnInt(3),
            query.columnInt(4), query.columnInt(5), query.columnInt(6), query.columnDouble(7),
            query.columnDouble(8), query.columnText(9), query.columnText(10)});
    return rounds;
}

} // namespace

std::vector<TrainRoundRow> trainRounds(Database& db, const std::string& id) {
    return roundRows(db, id, "ORDER BY round");
}

std::optional<TrainRoundRow> lastTrainRound(Database& db, const std::string& id) {
    auto last = roundRows(db, id, "ORDER BY round DESC LIMIT 1");
    if (last.empty())
        return std::nullopt;
    return last.front();
}

Expected<void> insertTrainBatch(Database& db, const std::string& id, const TrainBatchRow& batch) {
    return db.prepare("INSERT INTO train_batches(job_id, batch, tensors) VALUES(?,?,?)")
        .bind(1, id)
        .bind(2, batch.batch)
        .bind(3, batch.tensors)
        .run();
}

std::vector<TrainBatchRow> trainBatches(Database& db, const std::string& id) {
    std::vector<TrainBatchRow> batches;
    auto query =
        db.prepare("SELECT batch, tensors FROM train_batches WHERE job_id = ? ORDER BY batch");
    query.bind(1, id);
    while (query.step().value_or(false))
        batches.push_back(TrainBatchRow{query.columnInt(0), query.columnText(1)});
    return batches;
}

Expected<void> deleteTrainBatch(Database& db, const std::string& id, std::int64_t batch) {
    return db.prepare("DELETE FROM train_batches WHERE job_id = ? AND batch = ?")
        .bind(1, id)
        .bind(2, batch)
        .run();
}

Expected<void> deleteTrainBatches(Database& db, const std::string& id) {
    return db.prepare("DELETE FROM train_batches WHERE job_id = ?").bind(1, id).run();
}

} // namespace goblin::labnode
