// Tests of the matmul job kind through the Coordinator with fake peers on a real SQLite file: an
// honest job merged and delivered, a wrong tile rejected and redone elsewhere, an expired lease
// re-leased to another volunteer with a new attempt (its late result stale), a duplicate result,
// fetch and release, and a node restart that resumes the job without redoing accepted tiles.
#include <QtTest/QtTest>

#include <cmath>
#include <set>

#include "labnode/fake_answers.hpp"
#include "support/random_tensors.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

constexpr std::int64_t kM = 6, kK = 5, kN = 4;

net::Message wrongTile(const net::Message& task) {
    return resultFor(task, {std::make_shared<const core::Tensor>(
                               product(*task.tensors[0], *task.tensors[1], 1.0f))});
}

struct Inputs {
    core::Tensor a = goblin::testing::randomTensor(core::DType::F32, {kM, kK}, 11);
    core::Tensor b = goblin::testing::randomTensor(core::DType::F32, {kK, kN}, 12);
    net::Message submit() const {
        return net::Message{
            boost::json::object{
                {"type", "submit_matmul"}, {"id", 5}, {"tile", {3, 2}}, {"tensors", 2}},
            {std::make_shared<const core::Tensor>(a), std::make_shared<const core::Tensor>(b)}};
    }
};

// The product a researcher received matches a float64 recomputation.
bool deliveredProductIsRight(const FakePeerLink& researcher, const Inputs& inputs) {
    const auto done = researcher.sentOfType("job_done");
    if (done.size() != 1 || done[0].tensors.size() != 1)
        return false;
    const core::Tensor expected = product(inputs.a, inputs.b);
    const auto got = done[0].tensors[0]->values<float>();
    for (std::size_t i = 0; i < got.size(); ++i)
        if (std::fabs(got[i] - expected.values<float>()[i]) >
            1e-4f * (1 + std::fabs(expected.values<float>()[i])))
            return false;
    return true;
}

std::string jobIdOf(const FakePeerLink& researcher) {
    return std::string(researcher.sentOfType("job_accepted").at(0).control.at("job").as_string());
}

// Lets the volunteers answer with `answer` until the researcher has the product.
template <class Answer>
bool answerUntilDone(NodeHarness& node, FakeCluster& cluster, const FakePeerLink& researcher,
                     std::vector<FakeVolunteer*> volunteers, Answer&& answer) {
    return node.waitUntil([&] {
        for (FakeVolunteer* volunteer : volunteers)
            cluster.answer(*volunteer, answer);
        return researcher.count("job_done") == 1;
    });
}

CoordinatorSettings settings() {
    CoordinatorSettings chosen;
    chosen.leaseSeconds = 30;
    return chosen;
}

} // namespace

class TestMatmulJobs : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void honestJobIsMergedAndDelivered();
    void wrongTileIsRejectedAndRedoneElsewhere();
    void expiredLeaseIsReleasedWithANewAttempt();
    void duplicateResultIsStale();
    void fetchAndRelease();
    void restartResumesWithoutRedoingAcceptedTiles();
};

void TestMatmulJobs::honestJobIsMergedAndDelivered() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    auto& one = cluster.connectVolunteer(1, false);
    auto& two = cluster.connectVolunteer(1, false);
    Inputs inputs;
    cluster.fromResearcher(inputs.submit());
    QVERIFY(answerUntilDone(node, cluster, *researcher, {&one, &two}, honestTile));
    QVERIFY(deliveredProductIsRight(*researcher, inputs));
    QCOMPARE(
        researcher->sentOfType("job_accepted").at(0).control.at("tiles").to_number<std::int64_t>(),
        std::int64_t{4});
    const auto summary = researcher->sentOfType("job_done")[0].control.at("summary").as_object();
    QCOMPARE(summary.at("verdicts").at("accepted").to_number<std::int64_t>(), std::int64_t{4});
    QCOMPARE(summary.at("verdicts").at("rejected").to_number<std::int64_t>(), std::int64_t{0});
    QCOMPARE(summary.at("volunteers").to_number<std::int64_t>(), std::int64_t{2});
    QVERIFY(one.answered > 0 && two.answered > 0);
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM task_leases WHERE kind = 'matmul'"),
             std::int64_t{4});
    QVERIFY(researcher->count("progress") >= 1);
    // Task frames carry only the computation.
    const auto frame = one.link->sentOfType("task").at(0).control;
    for (const auto& [key, value] : frame)
        QVERIFY2(
            (std::set<std::string>{"type", "task", "attempt", "op", "dtype", "tensors"}.contains(
                std::string(key))),
            "a task frame carries more than the computation");
}

void TestMatmulJobs::wrongTileIsRejectedAndRedoneElsewhere() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    auto& liar = cluster.connectVolunteer(1, false);
    auto& honest = cluster.connectVolunteer(1, false);
    Inputs inputs;
    cluster.fromResearcher(inputs.submit());
    QVERIFY(node.waitUntil([&] {
        cluster.answer(liar, wrongTile);
        cluster.answer(honest, honestTile);
        return researcher->count("job_done") == 1;
    }));
    QVERIFY(deliveredProductIsRight(*researcher, inputs));
    const auto liarVerdicts = liar.verdicts();
    QVERIFY(!liarVerdicts.empty());
    for (const std::string& verdict : liarVerdicts)
        QCOMPARE(verdict, std::string("rejected"));
    // A tile it got wrong never went back to it, and every tile was accepted from the other.
    std::set<std::int64_t> liarTasks;
    for (const auto& task : liar.link->sentOfType("task"))
        QVERIFY2(liarTasks.insert(task.control.at("task").to_number<std::int64_t>()).second,
                 "a rejected tile went back to its liar");
    const auto lies = static_cast<std::int64_t>(liarTasks.size());
    QCOMPARE(
        queryInt(node.store,
                 "SELECT count(*) FROM results WHERE verdict = 'rejected' AND volunteer_id = '" +
                     liar.id() + "'"),
        lies);
    QCOMPARE(queryInt(node.store, "SELECT rejected FROM volunteers WHERE id = '" + liar.id() + "'"),
             lies);
    QCOMPARE(
        queryInt(node.store,
                 "SELECT count(*) FROM results WHERE verdict = 'accepted' AND volunteer_id = '" +
                     honest.id() + "'"),
        std::int64_t{4});
    QVERIFY(node.logged("REJECTED"));
}

void TestMatmulJobs::expiredLeaseIsReleasedWithANewAttempt() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    auto& sleeper = cluster.connectVolunteer(1, false);
    Inputs inputs;
    cluster.fromResearcher(inputs.submit());
    QVERIFY(node.waitUntil([&] { return sleeper.link->count("task") == 1; }));
    const auto first = sleeper.link->sentOfType("task")[0];
    // Another volunteer does the other three tiles; then the sleeper's lease expires.
    auto& other = cluster.connectVolunteer(1, false);
    QVERIFY(node.waitUntil([&] {
        cluster.answer(other, honestTile);
        return other.verdicts().size() == 3;
    }));
    node.now += 30.0;
    cluster.coordinator.scheduler().expireLeases();
    QVERIFY(node.waitUntil([&] { return other.link->count("task") == 4; }));
    // It goes to the other volunteer (never back to the sleeper) with a new attempt.
    const auto second = other.link->sentOfType("task")[3];
    QCOMPARE(second.control.at("task"), first.control.at("task"));
    QCOMPARE(second.control.at("attempt").to_number<std::int64_t>(),
             first.control.at("attempt").to_number<std::int64_t>() + 1);
    QCOMPARE(sleeper.link->count("task"), std::size_t{1});
    QVERIFY(node.logged("lease expired; back in the queue"));
    // The expired attempt's late answer is stale and merges nothing.
    cluster.coordinator.onMessage(sleeper.peer, honestTile(first));
    QCOMPARE(sleeper.verdicts(), std::vector<std::string>{"stale"});
    QVERIFY(answerUntilDone(node, cluster, *researcher, {&other}, honestTile));
    QVERIFY(deliveredProductIsRight(*researcher, inputs));
}

void TestMatmulJobs::duplicateResultIsStale() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    auto& volunteer = cluster.connectVolunteer(1, false);
    Inputs inputs;
    cluster.fromResearcher(inputs.submit());
    QVERIFY(node.waitUntil([&] { return volunteer.link->count("task") == 1; }));
    const auto task = volunteer.link->sentOfType("task")[0];
    cluster.coordinator.onMessage(volunteer.peer, honestTile(task));
    cluster.coordinator.onMessage(volunteer.peer, honestTile(task));
    volunteer.answered = 1;
    QVERIFY(answerUntilDone(node, cluster, *researcher, {&volunteer}, honestTile));
    QCOMPARE(volunteer.verdicts().at(0), std::string("stale")); // the replay, answered at once
    QCOMPARE(
        queryInt(node.store, "SELECT count(*) FROM results WHERE task_id = " +
                                 std::to_string(task.control.at("task").to_number<std::int64_t>())),
        std::int64_t{1});
    QVERIFY(deliveredProductIsRight(*researcher, inputs));
}

void TestMatmulJobs::fetchAndRelease() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    auto& volunteer = cluster.connectVolunteer(2, false);
    Inputs inputs;
    cluster.fromResearcher(inputs.submit());
    QVERIFY(answerUntilDone(node, cluster, *researcher, {&volunteer}, honestTile));
    const std::string job = jobIdOf(*researcher);
    researcher->clear();
    cluster.fromResearcher(control({{"type", "release"}, {"id", 8}, {"job", job}}));
    QCOMPARE(researcher->count("released"), std::size_t{1});
    cluster.fromResearcher(control({{"type", "fetch"}, {"id", 9}, {"job", job}}));
    QCOMPARE(researcher->sentOfType("error").at(0).control.at("code").as_string(), "not_found");
    // Another researcher cannot see a job that is not theirs.
    auto other = cluster.connectResearcher("tok-other");
    cluster.fromResearcher(control({{"type", "fetch"}, {"id", 10}, {"job", job}}));
    QCOMPARE(other->sentOfType("error").at(0).control.at("code").as_string(), "not_found");
}

void TestMatmulJobs::restartResumesWithoutRedoingAcceptedTiles() {
    const NodeFiles files;
    Inputs inputs;
    std::string job;
    std::set<std::int64_t> acceptedBefore;
    std::int64_t highestAttempt = 0;
    {
        NodeHarness node(files.db, files.blobs);
        FakeCluster cluster(node, settings());
        auto researcher = cluster.connectResearcher();
        auto& volunteer = cluster.connectVolunteer(4, false);
        cluster.fromResearcher(inputs.submit());
        QVERIFY(node.waitUntil([&] { return volunteer.link->count("task") == 4; }));
        job = jobIdOf(*researcher);
        // Two tiles are answered and accepted; the node then dies with two leases out.
        auto tasks = volunteer.link->sentOfType("task");
        for (int i = 0; i < 2; ++i) {
            acceptedBefore.insert(
                tasks[std::size_t(i)].control.at("task").to_number<std::int64_t>());
            cluster.coordinator.onMessage(volunteer.peer, honestTile(tasks[std::size_t(i)]));
        }
        QVERIFY(node.waitUntil([&] { return volunteer.verdicts().size() == 2; }));
        highestAttempt = queryInt(node.store, "SELECT max(attempt) FROM task_leases");
    }
    NodeHarness node(files.db, files.blobs);
    FakeCluster cluster(node, settings());
    QVERIFY(node.logged("job " + job + " resumed: 2 of 4 tile(s) already accepted"));
    auto researcher = cluster.connectResearcher();
    auto& volunteer = cluster.connectVolunteer(4, false);
    cluster.fromResearcher(control({{"type", "fetch"}, {"id", 3}, {"job", job}}));
    QVERIFY(answerUntilDone(node, cluster, *researcher, {&volunteer}, honestTile));
    QVERIFY(deliveredProductIsRight(*researcher, inputs));
    const auto tasks = volunteer.link->sentOfType("task");
    QCOMPARE(tasks.size(), std::size_t{2});
    for (const auto& task : tasks) {
        QVERIFY2(!acceptedBefore.contains(task.control.at("task").to_number<std::int64_t>()),
                 "an accepted tile was redone");
        // Attempt 1 was leased before the restart: numbers never repeat.
        QCOMPARE(task.control.at("attempt").to_number<std::int64_t>(), highestAttempt + 1);
    }
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM results WHERE verdict = 'accepted'"),
             std::int64_t{4});
}

QTEST_APPLESS_MAIN(TestMatmulJobs)
#include "test_matmul_jobs.moc"
