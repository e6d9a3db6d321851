// The training part of a NodeSnapshot: the newest training jobs and their last rounds, read from
// the training kind's tables (train_jobs, train_rounds) by SQL alone, as the other kinds' rows
// are. Core thread.
#include "http/node_snapshot.hpp"

#include <algorithm>

#include "store/database.hpp"

namespace goblin::labnode {

namespace {

std::vector<RoundRow> lastRounds(Database& db, const std::string& job) {
    std::vector<RoundRow> rounds;
    auto query = db.prepare("SELECT round, loss, tasks, rejected, seconds, graph_job "
                            "FROM train_rounds WHERE job_id = ? ORDER BY round DESC LIMIT ?");
    query.bind(1, std::string_view(job)).bind(2, std::int64_t{kDashboardRounds});
    while (true) {
        auto row = query.step();
        if (!row || !*row)
            break;
        rounds.push_back(RoundRow{query.columnInt(0), query.columnDouble(1), query.columnInt(2),
                                  query.columnInt(3), query.columnDouble(4), query.columnText(5)});
    }
    std::reverse(rounds.begin(), rounds.end());
    return rounds;
}

} // namespace

std::vector<TrainingRow> trainingRows(Database& db) {
    std::vector<TrainingRow> jobs;
    {
        auto query = db.prepare(
            "SELECT id, state, rounds_done, coalesce(json_extract(request, '$.train.rounds'), 0), "
            "created_at, updated_at, coalesce(round_job, '') FROM train_jobs "
            "ORDER BY created_at DESC LIMIT ?");
        query.bind(1, std::int64_t{kDashboardTrainingJobs});
        while (true) {
            auto row = query.step();
            if (!row || !*row)
                break;
            TrainingRow job;
            job.id = query.columnText(0);
            job.state = query.columnText(1);
            job.roundsDone = query.columnInt(2);
            job.rounds = query.columnInt(3);
            job.createdAt = query.columnDouble(4);
            job.updatedAt = query.columnDouble(5);
            job.roundJob = query.columnText(6);
            jobs.push_back(std::move(job));
        }
    }
    for (TrainingRow& job : jobs)
        job.lastRounds = lastRounds(db, job.id);
    return jobs;
}

} // namespace goblin::labnode
