#include "http/node_snapshot.hpp"

#include <algorithm>

#include "node/peer_registry.hpp"
#include "store/database.hpp"
#include "work/scheduler.hpp"

namespace goblin::labnode {

namespace {

std::vector<CountRow> countRows(Database& db, std::string_view sql, int columns) {
    std::vector<CountRow> rows;
    auto query = db.prepare(sql);
    while (true) {
        auto row = query.step();
        if (!row || !*row)
            return rows;
        CountRow out{query.columnText(0), query.columnText(1),
                     columns > 3 ? query.columnText(2) : std::string(), 0};
        out.count = query.columnInt(columns - 1);
        rows.push_back(std::move(out));
    }
}

std::int64_t single(Database& db, std::string_view sql) {
    auto query = db.prepare(sql);
    auto row = query.step();
    return row && *row ? query.columnInt(0) : 0;
}

std::vector<JobRow> recentJobs(Database& db) {
    std::vector<JobRow> jobs;
    auto query = db.prepare(
        "SELECT id, 'matmul', state, created_at, "
        "(SELECT count(*) FROM tasks t WHERE t.job_id = j.id AND t.state = 'accepted'), "
        "(SELECT count(*) FROM tasks t WHERE t.job_id = j.id) FROM jobs j "
        "UNION ALL SELECT id, 'graph', state, created_at, "
        "(SELECT count(*) FROM graph_tasks t WHERE t.job_id = g.id AND t.state = 'accepted'), "
        "tasks FROM graph_jobs g ORDER BY 4 DESC LIMIT ?");
    query.bind(1, std::int64_t{kStatusJobs});
    while (true) {
        auto row = query.step();
        if (!row || !*row)
            return jobs;
        jobs.push_back(JobRow{query.columnText(0), query.columnText(1), query.columnText(2),
                              query.columnInt(4), query.columnInt(5)});
    }
}

std::vector<VerdictRow> recentVerdicts(Database& db) {
    std::vector<VerdictRow> verdicts;
    auto query = db.prepare("SELECT 'matmul', task_id, volunteer_id, method, verdict, created_at "
                            "FROM results UNION ALL SELECT 'graph', task_id, volunteer_id, method, "
                            "verdict, created_at FROM graph_results ORDER BY 6 DESC LIMIT ?");
    query.bind(1, std::int64_t{kStatusVerdicts});
    while (true) {
        auto row = query.step();
        if (!row || !*row)
            return verdicts;
        verdicts.push_back(VerdictRow{query.columnText(0), query.columnInt(1), query.columnText(2),
                                      query.columnText(3), query.columnText(4)});
    }
}

std::int64_t auditsPassed(Database& db, const std::string& volunteer, bool* quarantined) {
    auto query = db.prepare("SELECT audits_passed, quarantined_at IS NOT NULL FROM "
                            "volunteer_trust WHERE volunteer_id = ?");
    query.bind(1, std::string_view(volunteer));
    auto row = query.step();
    if (!row || !*row)
        return 0;
    *quarantined = *quarantined || query.columnInt(1) != 0;
    return query.columnInt(0);
}

} // namespace

NodeSnapshot takeSnapshot(Database& db, const PeerRegistry& peers, const Scheduler& scheduler) {
    NodeSnapshot snapshot;
    snapshot.jobs = countRows(db,
                              "SELECT 'matmul', state, count(*) FROM jobs GROUP BY state "
                              "UNION ALL SELECT 'graph', state, count(*) FROM graph_jobs "
                              "GROUP BY state ORDER BY 1, 2",
                              3);
    snapshot.verdicts = countRows(
        db,
        "SELECT 'matmul', method, verdict, count(*) FROM results GROUP BY method, verdict "
        "UNION ALL SELECT 'graph', method, verdict, count(*) FROM graph_results "
        "GROUP BY method, verdict ORDER BY 1, 2, 3",
        4);
    snapshot.tasksPending =
        single(db, "SELECT count(*) FROM tasks t JOIN jobs j ON j.id = t.job_id "
                   "WHERE j.state = 'running' AND t.state != 'accepted'") +
        single(db, "SELECT count(*) FROM graph_tasks t JOIN graph_jobs j ON j.id = t.job_id "
                   "WHERE j.state = 'running' AND t.state != 'accepted'");
    {
        auto query = db.prepare("SELECT coalesce(sum(verify_seconds), 0) FROM results");
        auto row = query.step();
        snapshot.verificationSeconds = row && *row ? query.columnDouble(0) : 0.0;
    }
    snapshot.recentJobs = recentJobs(db);
    snapshot.recentVerdicts = recentVerdicts(db);
    for (const Peer* peer : peers.volunteers()) {
        VolunteerRow row;
        row.id = peer->volunteer.volunteerId;
        row.backend = peer->volunteer.backend;
        row.slots = scheduler.slotsOf(peer->id);
        row.leases = scheduler.leasesHeldBy(peer->id);
        row.quarantined = peer->volunteer.quarantined;
        row.auditsPassed = auditsPassed(db, row.id, &row.quarantined);
        snapshot.leases += row.leases;
        snapshot.volunteers.push_back(std::move(row));
    }
    return snapshot;
}

} // namespace goblin::labnode
