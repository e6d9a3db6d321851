#include "store/researcher_quotas.hpp"

namespace goblin::labnode {
namespace {

Expected<std::int64_t> researcherOfEmail(Database& db, const std::string& email) {
    auto query = db.prepare("SELECT id FROM researchers WHERE email = ?");
    query.bind(1, std::string_view(email));
    auto row = query.step();
    if (!row)
        return tl::unexpected(row.error());
    if (!*row)
        return makeError(ErrorCode::NotFound, "no researcher " + email);
    return query.columnInt(0);
}

} // namespace

ResearcherQuota quotaOf(Database& db, std::int64_t researcherId) {
    ResearcherQuota quota;
    auto query = db.prepare("SELECT max_bytes, max_flops, max_running_jobs FROM "
                            "researcher_quotas WHERE researcher_id = ?");
    query.bind(1, researcherId);
    auto row = query.step();
    if (!row || !*row)
        return quota;
    if (!query.columnIsNull(0))
        quota.maxBytes = query.columnInt(0);
    if (!query.columnIsNull(1))
        quota.maxFlops = query.columnDouble(1);
    if (!query.columnIsNull(2))
        quota.maxRunningJobs = query.columnInt(2);
    return quota;
}

Expected<ResearcherQuota> quotaOfEmail(Database& db, const std::string& email) {
    auto researcher = researcherOfEmail(db, email);
    if (!researcher)
        return tl::unexpected(researcher.error());
    return quotaOf(db, *researcher);
}

Expected<ResearcherQuota> setQuota(Database& db, const std::string& email,
                                   const QuotaChange& change, double now) {
    auto researcher = researcherOfEmail(db, email);
    if (!researcher)
        return tl::unexpected(researcher.error());
    ResearcherQuota quota = quotaOf(db, *researcher);
    quota.maxBytes = change.maxBytes.value_or(quota.maxBytes);
    quota.maxFlops = change.maxFlops.value_or(quota.maxFlops);
    quota.maxRunningJobs = change.maxRunningJobs.value_or(quota.maxRunningJobs);
    auto upsert = db.prepare(
        "INSERT INTO researcher_quotas(researcher_id, max_bytes, max_flops, max_running_jobs, "
        "updated_at) VALUES(?, ?, ?, ?, ?) ON CONFLICT(researcher_id) DO UPDATE SET "
        "max_bytes = excluded.max_bytes, max_flops = excluded.max_flops, "
        "max_running_jobs = excluded.max_running_jobs, updated_at = excluded.updated_at");
    upsert.bind(1, *researcher)
        .bind(2, quota.maxBytes)
        .bind(3, quota.maxFlops)
        .bind(4, quota.maxRunningJobs)
        .bind(5, now);
    if (auto ok = upsert.run(); !ok)
        return tl::unexpected(ok.error());
    return quota;
}

std::int64_t runningJobsOf(Database& db, std::int64_t researcherId) {
    auto query = db.prepare(
        "SELECT (SELECT count(*) FROM jobs WHERE researcher_id = ?1 AND state = 'running') + "
        "(SELECT count(*) FROM graph_jobs WHERE researcher_id = ?1 AND state = 'running' "
        "AND owner_job IS NULL) + "
        "(SELECT count(*) FROM train_jobs WHERE researcher_id = ?1 AND state = 'running')");
    query.bind(1, researcherId);
    auto row = query.step();
    if (!row || !*row)
        return 0;
    return query.columnInt(0);
}

} // namespace goblin::labnode
