#include "store/node_store.hpp"

#include <stdexcept>

#include "store/schema.hpp"

namespace goblin::labnode {

NodeStore::NodeStore(const std::string& path) try : m_db(path) {
    migrate();
} catch (const std::runtime_error& error) {
    // "file is not a database" alone does not say which file.
    std::string message = path;
    message.append(": ").append(error.what());
    throw std::runtime_error(message);
}

void NodeStore::migrate() {
    if (auto ok = migrateSchema(m_db); !ok)
        throw std::runtime_error(ok.error().message);
}

Expected<std::int64_t> NodeStore::addResearcher(const std::string& email,
                                                const std::string& tokenHash) {
    auto insert = m_db.prepare("INSERT INTO researchers(email, token_hash) VALUES(?, ?) "
                               "ON CONFLICT(email) DO UPDATE SET token_hash = excluded.token_hash "
                               "RETURNING id");
    insert.bind(1, email).bind(2, tokenHash);
    auto row = insert.step();
    if (!row)
        return tl::unexpected(row.error());
    return insert.columnInt(0);
}

std::optional<std::int64_t> NodeStore::researcherByTokenHash(const std::string& tokenHash) {
    auto query =
        m_db.prepare("SELECT r.id FROM researchers r WHERE r.token_hash = ? AND NOT EXISTS "
                     "(SELECT 1 FROM researcher_revocations v WHERE v.researcher_id = "
                     "r.id)");
    query.bind(1, tokenHash);
    auto row = query.step();
    if (!row || !*row)
        return std::nullopt;
    return query.columnInt(0);
}

Expected<void> NodeStore::addVolunteer(const std::string& id, const std::string& secretHash,
                                       double now) {
    auto insert = m_db.prepare(
        "INSERT INTO volunteers(id, secret_hash, created_at, last_seen) VALUES(?,?,?,?)");
    return insert.bind(1, id).bind(2, secretHash).bind(3, now).bind(4, now).run();
}

std::optional<VolunteerRecord> NodeStore::volunteer(const std::string& id) {
    auto query = m_db.prepare("SELECT secret_hash, banned FROM volunteers WHERE id = ?");
    query.bind(1, id);
    auto row = query.step();
    if (!row || !*row)
        return std::nullopt;
    return VolunteerRecord{id, query.columnText(0), query.columnInt(1) != 0};
}

Expected<void> NodeStore::touchVolunteer(const std::string& id, const std::string& backend,
                                         double now) {
    auto update = m_db.prepare("UPDATE volunteers SET last_seen = ?, backend = ? WHERE id = ?");
    return update.bind(1, now).bind(2, backend).bind(3, id).run();
}

Expected<void> NodeStore::insertJob(const JobRecord& job) {
    auto insert = m_db.prepare(
        "INSERT INTO jobs(id, researcher_id, kind, dtype, m, k, n, tile_rows, tile_cols, a_blob, "
        "b_blob, state, created_at) VALUES(?, ?, 'matmul', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    insert.bind(1, job.id)
        .bind(2, job.researcherId)
        .bind(3, std::string(core::wireName(job.dtype)));
    insert.bind(4, job.m).bind(5, job.k).bind(6, job.n).bind(7, job.tileRows).bind(8, job.tileCols);
    insert.bind(9, job.aBlob).bind(10, job.bBlob).bind(11, jobStateName(job.state));
    insert.bind(12, job.createdAt);
    return insert.run();
}

Expected<std::int64_t> NodeStore::insertTask(const std::string& jobId, const TileRecord& tile) {
    auto insert = m_db.prepare(
        "INSERT INTO tasks(job_id, row0, col0, rows, cols) VALUES(?,?,?,?,?) RETURNING id");
    insert.bind(1, jobId)
        .bind(2, tile.row0)
        .bind(3, tile.col0)
        .bind(4, tile.rows)
        .bind(5, tile.cols);
    auto row = insert.step();
    if (!row)
        return tl::unexpected(row.error());
    return insert.columnInt(0);
}

namespace {

JobRecord readJob(const ScopedStatement& query) {
    JobRecord job;
    job.id = query.columnText(0);
    job.researcherId = query.columnInt(1);
    job.dtype = core::dtypeFromWireName(query.columnText(2)).value_or(core::DType::F32);
    job.m = query.columnInt(3);
    job.k = query.columnInt(4);
    job.n = query.columnInt(5);
    job.tileRows = query.columnInt(6);
    job.tileCols = query.columnInt(7);
    job.aBlob = query.columnText(8);
    job.bBlob = query.columnText(9);
    job.state = storedJobState(query.columnText(10));
    job.createdAt = query.columnDouble(11);
    job.finishedAt = query.columnIsNull(12) ? 0.0 : query.columnDouble(12);
    return job;
}

constexpr const char* kJobColumns =
    "SELECT id, researcher_id, dtype, m, k, n, tile_rows, tile_cols, "
    "a_blob, b_blob, state, created_at, finished_at FROM jobs ";

} // namespace

std::vector<JobRecord> NodeStore::jobsInState(JobState state) {
    auto query = m_db.prepare(std::string(kJobColumns) + "WHERE state = ? ORDER BY created_at");
    query.bind(1, jobStateName(state));
    std::vector<JobRecord> jobs;
    while (query.step().value_or(false))
        jobs.push_back(readJob(query));
    return jobs;
}

std::optional<JobRecord> NodeStore::job(const std::string& id) {
    auto query = m_db.prepare(std::string(kJobColumns) + "WHERE id = ?");
    query.bind(1, id);
    if (!query.step().value_or(false))
        return std::nullopt;
    return readJob(query);
}

std::vector<TileRecord> NodeStore::tilesOf(const std::string& jobId) {
    auto query =
        m_db.prepare("SELECT t.id, t.row0, t.col0, t.rows, t.cols, t.state, coalesce((SELECT "
                     "max(l.attempt) FROM "
                     "task_leases l WHERE l.kind = 'matmul' AND l.task_id = t.id), 0) FROM tasks t "
                     "WHERE t.job_id = ? ORDER BY t.id");
    query.bind(1, jobId);
    std::vector<TileRecord> tiles;
    while (query.step().value_or(false)) {
        tiles.push_back(TileRecord{query.columnInt(0), query.columnInt(1), query.columnInt(2),
                                   query.columnInt(3), query.columnInt(4),
                                   query.columnText(5) == "accepted", query.columnInt(6)});
    }
    return tiles;
}

Expected<void> NodeStore::setJobState(const std::string& id, JobState state, double now) {
    auto update = m_db.prepare("UPDATE jobs SET state = ?, finished_at = coalesce(finished_at, ?) "
                               "WHERE id = ?");
    return update.bind(1, jobStateName(state)).bind(2, now).bind(3, id).run();
}

bool NodeStore::blobInUse(const std::string& digest, const std::string& exceptJob) {
    // Blobs are content-addressed, so matmul inputs, graph inputs and outputs and training data
    // and parameters may share one.
    auto query = m_db.prepare(
        "SELECT 1 FROM jobs WHERE id != ?1 AND state != 'released' AND (a_blob = ?2 OR b_blob = "
        "?2) "
        "UNION ALL SELECT 1 FROM graph_jobs WHERE id != ?1 AND state != 'released' AND "
        "instr(inputs, ?2) > 0 "
        "UNION ALL SELECT 1 FROM graph_tasks t JOIN graph_jobs j ON j.id = t.job_id WHERE "
        "j.id != ?1 AND j.state != 'released' AND instr(t.outputs, ?2) > 0 "
        "UNION ALL SELECT 1 FROM train_jobs WHERE id != ?1 AND state != 'released' AND "
        "(instr(inputs, ?2) > 0 OR instr(params, ?2) > 0) "
        "UNION ALL SELECT 1 FROM train_batches WHERE job_id != ?1 AND instr(tensors, ?2) > 0 "
        "UNION ALL SELECT 1 FROM train_snapshots WHERE job_id != ?1 AND instr(params, ?2) > 0 "
        "LIMIT 1");
    query.bind(1, exceptJob).bind(2, digest);
    return query.step().value_or(true);
}

JobSummaryCounts NodeStore::summaryCounts(const std::string& jobId) {
    JobSummaryCounts counts;
    auto totals = m_db.prepare(
        "SELECT sum(r.verdict = 'accepted'), sum(r.verdict = 'rejected'), "
        "count(DISTINCT CASE WHEN r.verdict = 'accepted' THEN r.volunteer_id END), "
        "coalesce(max(CASE WHEN r.verdict = 'accepted' THEN r.error_ratio END), 0), "
        "coalesce(sum(r.verify_seconds), 0), "
        "coalesce(max(CASE WHEN r.verdict = 'accepted' AND r.bound > 0 THEN r.residual / r.bound "
        "END), 0) FROM results r JOIN tasks t ON t.id = r.task_id WHERE t.job_id = ?");
    totals.bind(1, jobId);
    if (totals.step().value_or(false)) {
        counts.accepted = totals.columnInt(0);
        counts.rejected = totals.columnInt(1);
        counts.volunteers = totals.columnInt(2);
        counts.maxErrorRatio = totals.columnDouble(3);
        counts.verifySeconds = totals.columnDouble(4);
        counts.maxBoundRatio = totals.columnDouble(5);
    }
    auto backends = m_db.prepare("SELECT r.backend, count(*) FROM results r JOIN tasks t ON "
                                 "t.id = r.task_id WHERE t.job_id = ? AND r.verdict = 'accepted' "
                                 "GROUP BY r.backend");
    backends.bind(1, jobId);
    while (backends.step().value_or(false))
        counts.backends.emplace_back(backends.columnText(0), backends.columnInt(1));
    return counts;
}

} // namespace goblin::labnode
