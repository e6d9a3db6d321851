// Tests of the VerdictPath on an in-memory database: a burst of batches commits in one transaction
// before any volunteer is told, the kind's extra write shares it, a failure writes nothing and
// tells nobody, each kind's records land in its table, and the verdict frame's form.
#include <QtTest/QtTest>

#include "kinds/graph/graph_store.hpp"
#include "labnode/node_harness.hpp"
#include "work/verdict_path.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

struct Rig : RoleRig {
    VerdictPath verdicts{context, peers};
    std::shared_ptr<FakePeerLink> link = std::make_shared<FakePeerLink>();

    Rig() {
        peers.add(1, link, PeerRole::Volunteer).ready = true;
        (void)node.store.addVolunteer("v-1", "h", 1.0);
    }
    std::int64_t tileTask() {
        JobRecord job{"j-1", 1,   core::DType::F32,  1,   1, 1, 1, 1,
                      "a",   "b", JobState::Running, 1.0, 0};
        (void)node.store.addResearcher("r@lab.example", "t");
        (void)node.store.insertJob(job);
        return node.store.insertTask("j-1", TileRecord{0, 0, 0, 1, 1, false, 0}).value_or(0);
    }
};

VerdictRecord tile(std::int64_t task, std::int64_t attempt, bool accepted) {
    VerdictRecord record;
    record.kind = "matmul";
    record.task = task;
    record.attempt = attempt;
    record.volunteerId = "v-1";
    record.backend = "cpu-eigen";
    record.accepted = accepted;
    record.method = "freivalds-f64";
    record.ratio = accepted ? 0.5 : 3.0;
    return record;
}

} // namespace

class TestVerdictPath : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void burstCommitsOnceThenTells();
    void failureWritesNothingAndTellsNobody();
    void graphVerdictsGoToTheirTable();
    void verdictFrames();
};

void TestVerdictPath::burstCommitsOnceThenTells() {
    Rig rig;
    const std::int64_t task = rig.tileTask();
    std::vector<std::string> order;
    for (int attempt = 1; attempt <= 2; ++attempt) {
        VerdictBatch batch;
        batch.verdicts.push_back({1, tile(task, attempt, attempt == 2)});
        batch.committed = [&, attempt](const VerdictBatch&) {
            // The volunteer was told before the follow-up runs, and the row is there.
            order.push_back("committed " + std::to_string(attempt) + " after " +
                            std::to_string(rig.link->count("verdict")) + " verdict(s)");
        };
        rig.verdicts.enqueue(std::move(batch));
    }
    QCOMPARE(rig.link->count("verdict"), std::size_t{0}); // nothing before the burst commits
    QCOMPARE(queryInt(rig.node.store, "SELECT count(*) FROM results"), std::int64_t{0});
    rig.node.poll();
    QCOMPARE(queryInt(rig.node.store, "SELECT count(*) FROM results"), std::int64_t{2});
    QCOMPARE(queryInt(rig.node.store, "SELECT accepted FROM volunteers WHERE id = 'v-1'"),
             std::int64_t{1});
    QCOMPARE(queryInt(rig.node.store, "SELECT rejected FROM volunteers WHERE id = 'v-1'"),
             std::int64_t{1});
    QCOMPARE(order, (std::vector<std::string>{"committed 1 after 1 verdict(s)",
                                              "committed 2 after 2 verdict(s)"}));
    const auto sent = rig.link->sentOfType("verdict");
    QCOMPARE(sent[0].control.at("verdict").as_string(), "rejected");
    QCOMPARE(sent[1].control.at("verdict").as_string(), "accepted");
}

void TestVerdictPath::failureWritesNothingAndTellsNobody() {
    Rig rig;
    const std::int64_t task = rig.tileTask();
    int failed = 0;
    int committed = 0;
    VerdictBatch good;
    good.verdicts.push_back({1, tile(task, 1, false)});
    good.committed = [&](const VerdictBatch&) { ++committed; };
    good.failed = [&](const VerdictBatch&, const Error&) { ++failed; };
    VerdictBatch bad;
    bad.verdicts.push_back({1, tile(task, 2, true)});
    bad.alsoWrite = [](Database&) -> Expected<void> {
        return makeError(ErrorCode::Internal, "disk full");
    };
    bad.committed = [&](const VerdictBatch&) { ++committed; };
    bad.failed = [&](const VerdictBatch&, const Error& error) {
        ++failed;
        QCOMPARE(error.message, std::string("disk full"));
    };
    rig.verdicts.enqueue(std::move(good));
    rig.verdicts.enqueue(std::move(bad));
    rig.node.poll();
    QCOMPARE(failed, 2);
    QCOMPARE(committed, 0);
    QCOMPARE(rig.link->count("verdict"), std::size_t{0});
    QCOMPARE(queryInt(rig.node.store, "SELECT count(*) FROM results"), std::int64_t{0});
    QCOMPARE(queryInt(rig.node.store, "SELECT rejected FROM volunteers WHERE id = 'v-1'"),
             std::int64_t{0});
    // A second accepted verdict for one task is refused by the database: nothing of it lands.
    VerdictBatch first;
    first.verdicts.push_back({1, tile(task, 3, true)});
    rig.verdicts.commitNow(std::move(first));
    VerdictBatch second;
    second.verdicts.push_back({1, tile(task, 4, true)});
    bool refused = false;
    second.failed = [&](const VerdictBatch&, const Error&) { refused = true; };
    rig.verdicts.commitNow(std::move(second));
    QVERIFY(refused);
    QCOMPARE(queryInt(rig.node.store, "SELECT count(*) FROM results"), std::int64_t{1});
    QCOMPARE(rig.link->count("verdict"), std::size_t{1});
}

void TestVerdictPath::graphVerdictsGoToTheirTable() {
    Rig rig;
    auto researcher = rig.node.store.addResearcher("r@lab.example", "t");
    QVERIFY(researcher.has_value());
    QVERIFY(
        insertGraphJob(rig.node.store.database(),
                       GraphJobRow{"g-1", *researcher, JobState::Running, 1, "{}", "[]", 1.0, {}})
            .has_value());
    const auto task = insertGraphTask(rig.node.store.database(), "g-1", 0);
    QVERIFY(task.has_value());
    VerdictRecord record;
    record.kind = "graph";
    record.task = *task;
    record.attempt = 2;
    record.volunteerId = "v-1";
    record.accepted = false;
    record.method = "node-sample";
    record.ratio = 12.5;
    record.reason = "output 0 differs";
    VerdictBatch batch;
    batch.verdicts.push_back({0, record}); // peer 0: nobody to tell
    rig.verdicts.commitNow(std::move(batch));
    QCOMPARE(
        queryInt(rig.node.store,
                 "SELECT count(*) FROM graph_results WHERE task_id = " + std::to_string(*task) +
                     " AND attempt = 2 AND method = 'node-sample' AND verdict = 'rejected'"),
        std::int64_t{1});
    QCOMPARE(queryInt(rig.node.store, "SELECT count(*) FROM results"), std::int64_t{0});
    QCOMPARE(rig.link->count("verdict"), std::size_t{0});
}

void TestVerdictPath::verdictFrames() {
    const auto stale = verdictMessage(5, 9, VerdictWord::Stale);
    QCOMPARE(stale.type(), std::string_view("verdict"));
    QCOMPARE(stale.control.at("task").as_int64(), std::int64_t{5});
    QCOMPARE(stale.control.at("attempt").as_int64(), std::int64_t{9});
    QCOMPARE(stale.control.at("verdict").as_string(), "stale");
    QVERIFY(stale.tensors.empty());
    QCOMPARE(verdictMessage(1, 1, VerdictWord::Accepted).control.at("verdict").as_string(),
             "accepted");
    Rig rig;
    rig.verdicts.sendStale(1, 5, 9);
    QCOMPARE(rig.link->sentOfType("verdict")[0].control, stale.control);
}

QTEST_APPLESS_MAIN(TestVerdictPath)
#include "test_verdict_path.moc"
