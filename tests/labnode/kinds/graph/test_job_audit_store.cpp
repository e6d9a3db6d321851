// Tests of which delivered graph tasks a quarantine rechecks (kinds/graph/job_audit_store) on a
// real SQLite file: a task resting on two volunteers' agreement is a suspect whether agreement
// alone decided it or the node's cheap audit of the agreed outputs did (that audit passes values
// within a matmul's rounding bound); a task checked alone (one accepted result), one the node
// computed itself, and a job still running are not.
#include <QtTest/QtTest>

#include <algorithm>
#include <string>

#include "kinds/graph/job_audit_store.hpp"
#include "labnode/store_lab.hpp"

using namespace goblin::labnode;

namespace {

const std::string kLiar = "v-liar";

struct Lab : goblin::labnode::testing::StoreLab {
    std::int64_t nextTask = 1;

    void job(const std::string& id, const std::string& state) {
        QVERIFY(db.prepare("INSERT INTO graph_jobs(id, researcher_id, tasks, request, inputs, "
                           "state, created_at) VALUES (?, ?, 1, '{}', '[]', ?, 1)")
                    .bind(1, id)
                    .bind(2, researcher)
                    .bind(3, state)
                    .run()
                    .has_value());
    }

    // A decided task of `jobId` with one accepted result per volunteer, all by `method`.
    std::int64_t task(const std::string& jobId, const std::string& method,
                      std::initializer_list<std::string> volunteers) {
        const std::int64_t id = nextTask++;
        if (!db.prepare("INSERT INTO graph_tasks(id, job_id, chunk, state, outputs) VALUES "
                        "(?, ?, ?, 'decided', '[]')")
                 .bind(1, id)
                 .bind(2, jobId)
                 .bind(3, id)
                 .run())
            return 0;
        std::int64_t attempt = 1;
        for (const std::string& volunteer : volunteers)
            if (!db.prepare("INSERT INTO graph_results(task_id, attempt, volunteer_id, backend, "
                            "verdict, method, created_at) VALUES (?, ?, ?, 'cpu-eigen', "
                            "'accepted', ?, 1)")
                     .bind(1, id)
                     .bind(2, attempt++)
                     .bind(3, volunteer)
                     .bind(4, method)
                     .run())
                return 0;
        return id;
    }
};

std::vector<std::int64_t> suspectIds(Database& db, const std::string& jobId) {
    std::vector<std::int64_t> ids;
    for (const SuspectTask& suspect : suspectTasks(db, jobId, kLiar))
        ids.push_back(suspect.taskId);
    return ids;
}

} // namespace

class TestJobAuditStore : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void agreedTasksAreSuspectsHoweverTheyWereDecided() {
        Lab lab;
        lab.job("g-done", "done");
        const auto agreed = lab.task("g-done", "replica-agreement", {kLiar, "v-partner"});
        const auto audited = lab.task("g-done", "node-audit", {kLiar, "v-partner"});
        lab.task("g-done", "node-audit", {kLiar});               // checked alone
        lab.task("g-done", "node-tiebreak", {kLiar});            // the node's own outputs
        lab.task("g-done", "replica-agreement", {"v-a", "v-b"}); // without the liar
        QCOMPARE(suspectIds(lab.db, "g-done"), (std::vector<std::int64_t>{agreed, audited}));
        QVERIFY(usesReplicaAgreement(lab.db, "g-done"));
    }

    void onlyDeliveredJobsWithAnAgreedTaskOfTheVolunteer() {
        Lab lab;
        for (const char* state : {"done", "retained", "released", "running"})
            lab.job(std::string("g-") + state, state);
        lab.task("g-done", "node-audit", {kLiar, "v-partner"});
        lab.task("g-retained", "replica-agreement", {"v-partner", kLiar});
        lab.task("g-released", "node-audit", {kLiar}); // checked alone: nothing to recheck
        lab.task("g-running", "node-audit", {kLiar, "v-partner"}); // rechecked while it runs
        QCOMPARE(deliveredJobsUsing(lab.db, kLiar),
                 (std::vector<std::string>{"g-done", "g-retained"}));
        QVERIFY(!usesReplicaAgreement(lab.db, "g-released"));
    }
};

QTEST_APPLESS_MAIN(TestJobAuditStore)
#include "test_job_audit_store.moc"
