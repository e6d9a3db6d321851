// The lab node's durable state in SQLite: schema, researchers, volunteers, jobs, tasks, leases and
// verdicts. Callers group writes in a Transaction. Owned by the node's core thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "goblin/core/dtype.hpp"
#include "goblin/core/error.hpp"
#include "store/database.hpp"
#include "store/schema.hpp"
#include "work/job_state.hpp"

namespace goblin::labnode {

struct VolunteerRecord {
    std::string id;
    std::string secretHash;
    bool banned = false;
};

struct TileRecord {
    std::int64_t taskId = 0;
    std::int64_t row0 = 0, col0 = 0, rows = 0, cols = 0;
    bool accepted = false;
    std::int64_t attempt = 0;
};

struct JobRecord {
    std::string id;
    std::int64_t researcherId = 0;
    core::DType dtype = core::DType::F32;
    std::int64_t m = 0, k = 0, n = 0;
    std::int64_t tileRows = 0, tileCols = 0;
    std::string aBlob, bBlob;
    JobState state = JobState::Running;
    double createdAt = 0, finishedAt = 0;
};

struct JobSummaryCounts {
    std::int64_t accepted = 0, rejected = 0, volunteers = 0;
    // maxErrorRatio: worst element error ÷ its own bound over accepted tiles (results.error_ratio);
    // maxBoundRatio: worst residual ÷ its sound bound over them (< 1).
    double maxErrorRatio = 0, maxBoundRatio = 0, verifySeconds = 0;
    std::vector<std::pair<std::string, std::int64_t>> backends;
};

class NodeStore {
public:
    explicit NodeStore(const std::string& path); // opens and migrates; throws on startup failure
    Database& database() { return m_db; }

    Expected<std::int64_t> addResearcher(const std::string& email, const std::string& tokenHash);
    std::optional<std::int64_t> researcherByTokenHash(const std::string& tokenHash);

    Expected<void> addVolunteer(const std::string& id, const std::string& secretHash, double now);
    std::optional<VolunteerRecord> volunteer(const std::string& id);
    Expected<void> touchVolunteer(const std::string& id, const std::string& backend, double now);

    Expected<void> insertJob(const JobRecord& job);
    Expected<std::int64_t> insertTask(const std::string& jobId, const TileRecord& tile);
    std::vector<JobRecord> jobsInState(JobState state);
    std::optional<JobRecord> job(const std::string& id);
    std::vector<TileRecord> tilesOf(const std::string& jobId);
    Expected<void> setJobState(const std::string& id, JobState state, double now);
    // True when another job that is not released still uses the blob.
    bool blobInUse(const std::string& digest, const std::string& exceptJob);

    JobSummaryCounts summaryCounts(const std::string& jobId);

private:
    void migrate();
    Database m_db;
};

} // namespace goblin::labnode
