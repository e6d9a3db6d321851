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

// Jobs researchers submitted: a training round's graph job shows under its training job instead.
std::vector<JobRow> recentJobs(Database& db) {
    std::vector<JobRow> jobs;
    auto query = db.prepare(
        "SELECT id, 'matmul', state, created_at, "
        "(SELECT count(*) FROM tasks t WHERE t.job_id = j.id AND t.state = 'accepted'), "
        "(SELECT count(*) FROM tasks t WHERE t.job_id = j.id), coalesce(finished_at, 0) "
        "FROM jobs j "
        "UNION ALL SELECT id, 'graph', state, created_at, "
        "(SELECT count(*) FROM graph_tasks t WHERE t.job_id = g.id AND t.state = 'accepted'), "
        "tasks, coalesce(finished_at, 0) FROM graph_jobs g WHERE owner_job IS NULL "
        "UNION ALL SELECT id, 'train', state, created_at, rounds_done, "
        "coalesce(json_extract(request, '$.train.rounds'), 0), "
        "CASE WHEN state = 'running' THEN 0 ELSE updated_at END FROM train_jobs "
        "ORDER BY 4 DESC LIMIT ?");
    query.bind(1, std::int64_t{kStatusJobs});
    while (true) {
        auto row = query.step();
        if (!row || !*row)
            return jobs;
        jobs.push_back(JobRow{query.columnText(0), query.columnText(1), query.columnText(2),
                              query.columnInt(4), query.columnInt(5), query.columnDouble(3),
                              query.columnDouble(6)});
    }
}

// The job of each task a volunteer holds (ids only).
std::vector<HeldTask> heldTasks(Database& db, const std::vector<Lease>& leases) {
    std::vector<HeldTask> held;
    for (const Lease& lease : leases) {
        HeldTask task{std::string(lease.kind), lease.task, {}};
        std::string_view sql;
        if (lease.kind == "matmul")
            sql = "SELECT job_id FROM tasks WHERE id = ?";
        else if (lease.kind == "graph")
            sql = "SELECT job_id FROM graph_tasks WHERE id = ?";
        if (!sql.empty()) {
            auto query = db.prepare(sql);
            query.bind(1, lease.task);
            if (auto row = query.step(); row && *row)
                task.job = query.columnText(0);
        }
        held.push_back(std::move(task));
    }
    return held;
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
                              "GROUP BY state UNION ALL SELECT 'train', state, count(*) "
                              "FROM train_jobs GROUP BY state ORDER BY 1, 2",
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
    snapshot.training = trainingRows(db);
    snapshot.accessRequestsPending =
        single(db, "SELECT count(*) FROM access_requests WHERE state = 'pending'");
    snapshot.volunteersBanned =
        single(db, "SELECT count(*) FROM volunteer_bans WHERE lifted_at IS NULL");
    snapshot.volunteersQuarantined =
        single(db, "SELECT count(*) FROM volunteer_trust WHERE quarantined_at IS NOT NULL");
    snapshot.researchersConnected = peers.readyResearcherCount();
    for (const Peer* peer : peers.volunteers()) {
        VolunteerRow row;
        row.id = peer->volunteer.volunteerId;
        row.backend = peer->volunteer.backend;
        row.slots = scheduler.slotsOf(peer->id);
        row.leases = scheduler.leasesHeldBy(peer->id);
        row.quarantined = peer->volunteer.quarantined;
        row.auditsPassed = auditsPassed(db, row.id, &row.quarantined);
        row.holds = heldTasks(db, scheduler.leasesOf(peer->id));
        snapshot.leases += row.leases;
        snapshot.volunteers.push_back(std::move(row));
    }
    return snapshot;
}

} // namespace goblin::labnode
