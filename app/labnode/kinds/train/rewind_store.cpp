#include "kinds/train/rewind_store.hpp"

namespace goblin::labnode {

Expected<void> keepTrainSnapshot(Database& db, const std::string& jobId, std::int64_t round,
                                 const std::string& params) {
    auto insert =
        db.prepare("INSERT OR IGNORE INTO train_snapshots(job_id, round, params) VALUES(?,?,?)");
    return insert.bind(1, jobId).bind(2, round).bind(3, params).run();
}

std::optional<std::string> trainSnapshot(Database& db, const std::string& jobId,
                                         std::int64_t round) {
    auto query = db.prepare("SELECT params FROM train_snapshots WHERE job_id = ? AND round = ?");
    query.bind(1, jobId).bind(2, round);
    if (!query.step().value_or(false))
        return std::nullopt;
    return query.columnText(0);
}

Expected<std::vector<std::string>> dropTrainSnapshots(Database& db, const std::string& jobId) {
    std::vector<std::string> held;
    {
        auto query = db.prepare("SELECT params FROM train_snapshots WHERE job_id = ?");
        query.bind(1, jobId);
        while (query.step().value_or(false))
            held.push_back(query.columnText(0));
    }
    auto drop = db.prepare("DELETE FROM train_snapshots WHERE job_id = ?");
    if (auto ok = drop.bind(1, jobId).run(); !ok)
        return tl::unexpected(ok.error());
    return held;
}

std::optional<TrainRoundRef> trainRoundOfGraphJob(Database& db, const std::string& graphJob) {
    auto query = db.prepare("SELECT job_id, round FROM train_rounds WHERE graph_job = ?");
    query.bind(1, graphJob);
    if (!query.step().value_or(false))
        return std::nullopt;
    return TrainRoundRef{query.columnText(0), query.columnInt(1)};
}

std::string whyRedone(Database& db, const std::string& jobId, std::int64_t round) {
    auto query =
        db.prepare("SELECT reason FROM train_rewinds WHERE job_id = ? AND first_round <= ? "
                   "AND end_round > ? ORDER BY rowid DESC LIMIT 1");
    query.bind(1, jobId).bind(2, round).bind(3, round);
    return query.step().value_or(false) ? query.columnText(0) : std::string();
}

Expected<std::vector<std::string>> rewindTrainJob(Database& db, const std::string& jobId,
                                                  const TrainRewind& rewind, double now) {
    std::vector<std::string> undone;
    {
        auto later =
            db.prepare("SELECT params FROM train_snapshots WHERE job_id = ? AND round > ?");
        later.bind(1, jobId).bind(2, rewind.round);
        while (later.step().value_or(false))
            undone.push_back(later.columnText(0));
    }
    for (const char* sql : {"DELETE FROM train_snapshots WHERE job_id = ? AND round > ?",
                            "DELETE FROM train_rounds WHERE job_id = ? AND round >= ?"}) {
        auto drop = db.prepare(sql);
        if (auto ok = drop.bind(1, jobId).bind(2, rewind.round).run(); !ok)
            return tl::unexpected(ok.error());
    }
    auto job = db.prepare("UPDATE train_jobs SET params = ?, rounds_done = ?, round_job = NULL, "
                          "updated_at = ? WHERE id = ?");
    if (auto ok =
            job.bind(1, rewind.params).bind(2, rewind.roundsDone).bind(3, now).bind(4, jobId).run();
        !ok)
        return tl::unexpected(ok.error());
    auto record = db.prepare("INSERT INTO train_rewinds(job_id, first_round, end_round, reason, "
                             "created_at) VALUES(?,?,?,?,?)");
    if (auto ok = record.bind(1, jobId)
                      .bind(2, rewind.round)
                      .bind(3, rewind.end)
                      .bind(4, rewind.why)
                      .bind(5, now)
                      .run();
        !ok)
        return tl::unexpected(ok.error());
    return undone;
}

Expected<void> insertLateCatch(Database& db, const std::string& jobId, const LateCatch& caught,
                               double now) {
    auto insert = db.prepare("INSERT INTO train_late_catches(job_id, graph_job, reason, "
                             "started_at) VALUES(?,?,?,?)");
    return insert.bind(1, jobId).bind(2, caught.graphJob).bind(3, caught.reason).bind(4, now).run();
}

Expected<void> endLateCatch(Database& db, const std::string& jobId, const std::string& error,
                            double now) {
    auto update = db.prepare("UPDATE train_late_catches SET ended_at = ?, error = ? WHERE "
                             "job_id = ? AND ended_at IS NULL");
    return update.bind(1, now).bind(2, error).bind(3, jobId).run();
}

std::vector<LateCatch> lateCatchesOf(Database& db, const std::string& jobId) {
    std::vector<LateCatch> caught;
    auto query = db.prepare("SELECT graph_job, reason, started_at, ended_at IS NOT NULL, "
                            "coalesce(error, '') FROM train_late_catches WHERE job_id = ? "
                            "ORDER BY rowid");
    query.bind(1, jobId);
    while (query.step().value_or(false))
        caught.push_back(LateCatch{query.columnText(0), query.columnText(1),
                                   query.columnInt(3) != 0, query.columnText(4),
                                   query.columnDouble(2)});
    return caught;
}

std::vector<std::string> jobsRetraining(Database& db) {
    std::vector<std::string> jobs;
    auto query =
        db.prepare("SELECT DISTINCT job_id FROM train_late_catches WHERE ended_at IS NULL");
    while (query.step().value_or(false))
        jobs.push_back(query.columnText(0));
    return jobs;
}

} // namespace goblin::labnode
