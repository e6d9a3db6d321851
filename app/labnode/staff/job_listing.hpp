// What lab staff see of jobs and of the node as a whole (`jobs list|show`, `status`): ids, kinds,
// states, task counts, times and the researcher's e-mail, never research data. Read-only queries
// for the staff commands (their own connection).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/database.hpp"
#include "work/group_owner.hpp"

namespace goblin::labnode {

struct JobListing {
    std::string id, kind, state, researcher;
    std::int64_t tasks = 0, tasksDone = 0;
    double createdAt = 0, finishedAt = 0;
    std::int64_t researcherId = 0;
    GroupOwner owner; // a training job's round: the training job, which stands for it
};
// Newest first, every kind together; training jobs' rounds are left out (their training jobs
// stand for them; findJob finds them).
std::vector<JobListing> listJobs(Database& db);
// One researcher's jobs, newest first, at most `limit`; its training jobs' rounds are left out.
std::vector<JobListing> listJobsOf(Database& db, std::int64_t researcherId, std::size_t limit);
std::optional<JobListing> findJob(Database& db, const std::string& id);

struct JobResultCounts {
    std::int64_t accepted = 0, rejected = 0, volunteers = 0;
};
JobResultCounts jobResultCounts(Database& db, const JobListing& job);

struct NodeCounts {
    std::vector<std::pair<std::string, std::int64_t>> jobsByState; // state -> jobs, by state
    std::int64_t volunteers = 0, banned = 0, quarantined = 0;
    std::int64_t researchers = 0, activeResearchers = 0;
};
NodeCounts countNode(Database& db);

// Jobs done, failed or cancelled (never released) that finished before `before`, oldest first,
// at most `limit` (training jobs' rounds are not among them: their training jobs' are).
std::vector<std::string> finishedJobsBefore(Database& db, double before, std::size_t limit);

} // namespace goblin::labnode
