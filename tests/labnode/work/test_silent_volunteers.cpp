// Leases that cannot be gamed, through the Coordinator with fake peers and the injected clock:
// a volunteer that takes leases and never answers, beside an honest one, costs the job at most two
// lease periods, never gets a task back and loses slots; alone, it makes the node compute the
// tiles itself (bit for bit the float64 product rounded once); a tile that expired three times
// is the node's even while untried volunteers remain; graph tasks behave the same.
#include <QtTest/QtTest>

#include <set>

#include "labnode/fake_answers.hpp"
#include "support/random_tensors.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

constexpr double kLease = 30.0;

// A 12×5 · 5×8 product; tiles of 3×2 make 16 tasks, one tile of 12×8 makes one.
struct Inputs {
    core::Tensor a = goblin::testing::randomTensor(core::DType::F32, {12, 5}, 21);
    core::Tensor b = goblin::testing::randomTensor(core::DType::F32, {5, 8}, 22);
    net::Message submit(std::int64_t tileRows, std::int64_t tileCols) const {
        return net::Message{
            boost::json::object{{"type", "submit_matmul"},
                                {"id", 5},
                                {"tile", {tileRows, tileCols}},
                                {"tensors", 2}},
            {std::make_shared<const core::Tensor>(a), std::make_shared<const core::Tensor>(b)}};
    }
};

// The researcher's product equals the float64 reference bit for bit.
bool deliveredProductIsExact(const FakePeerLink& researcher, const Inputs& inputs) {
    const auto done = researcher.sentOfType("job_done");
    if (done.size() != 1 || done[0].tensors.size() != 1)
        return false;
    const core::Tensor expected = product(inputs.a, inputs.b);
    const auto got = done[0].tensors[0]->values<float>();
    const auto want = expected.values<float>();
    return std::equal(got.begin(), got.end(), want.begin(), want.end());
}

// Every task id `volunteer` was sent, each once (false when one came twice).
bool eachTaskOnce(const FakeVolunteer& volunteer, std::set<std::int64_t>* tasks = nullptr) {
    std::set<std::int64_t> seen;
    for (const auto& task : volunteer.link->sentOfType("task"))
        if (!seen.insert(task.control.at("task").to_number<std::int64_t>()).second)
            return false;
    if (tasks)
        *tasks = seen;
    return true;
}

CoordinatorSettings settings() {
    CoordinatorSettings chosen;
    chosen.leaseSeconds = kLease;
    return chosen;
}

// Runs the node until the researcher has its result: the honest volunteers answer whatever they
// were sent; once the node has been quiet for a while (nothing ran on core, nothing to answer:
// workers are done too), the clock moves five seconds and the lease timer runs.
bool runUntilDone(NodeHarness& node, FakeCluster& cluster, const FakePeerLink& researcher,
                  const std::vector<FakeVolunteer*>& honest,
                  net::Message (*answer)(const net::Message&)) {
    int quiet = 0;
    return node.waitUntil([&] {
        node.core.restart();
        bool busy = node.core.poll() > 0;
        for (FakeVolunteer* volunteer : honest) {
            busy = busy || !volunteer->unanswered().empty();
            cluster.answer(*volunteer, answer);
        }
        if (researcher.count("job_done") == 1)
            return true;
        quiet = busy ? 0 : quiet + 1;
        if (quiet >= 10) {
            quiet = 0;
            node.now += 5.0;
            cluster.coordinator.scheduler().expireLeases();
        }
        return false;
    });
}

std::int64_t countResults(NodeStore& store, const std::string& where) {
    return queryInt(store, "SELECT count(*) FROM results WHERE " + where);
}

} // namespace

class TestSilentVolunteers : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void silentVolunteerBesideAnHonestOne();
    void onlyASilentVolunteerMakesTheNodeCompute();
    void tileThatExpiresThreeTimesIsComputedOnNode();
    void silentGraphVolunteerBesideAnHonestOne();
};

void TestSilentVolunteers::silentVolunteerBesideAnHonestOne() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    auto& silent = cluster.connectVolunteer(4, false);
    auto& honest = cluster.connectVolunteer(1, false);
    Inputs inputs;
    const double start = node.now;
    cluster.fromResearcher(inputs.submit(3, 2));
    QVERIFY(runUntilDone(node, cluster, *researcher, {&honest}, honestTile));
    QVERIFY(deliveredProductIsExact(*researcher, inputs));
    QVERIFY2(node.now - start <= 2 * kLease, "the job took more than two lease periods");
    std::set<std::int64_t> silentTasks;
    QVERIFY2(eachTaskOnce(silent, &silentTasks), "a task went back to the silent volunteer");
    QCOMPARE(silentTasks.size(), std::size_t{4});
    QCOMPARE(cluster.coordinator.scheduler().slotsOf(silent.peer), 1); // 4 expiries: 4 → 1
    QCOMPARE(cluster.coordinator.scheduler().slotsOf(honest.peer), 1);
    // Every tile the silent one held was accepted from the honest one; the node computed none.
    QCOMPARE(
        countResults(node.store, "verdict = 'accepted' AND volunteer_id = '" + honest.id() + "'"),
        std::int64_t{16});
    QCOMPARE(countResults(node.store, "method = 'node-compute'"), std::int64_t{0});
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM lease_losses WHERE why = 'expired' AND "
                                  "volunteer_id = '" +
                                      silent.id() + "'"),
             std::int64_t{4});
}

void TestSilentVolunteers::onlyASilentVolunteerMakesTheNodeCompute() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    auto& silent = cluster.connectVolunteer(2, false);
    Inputs inputs;
    cluster.fromResearcher(inputs.submit(3, 2));
    QVERIFY(runUntilDone(node, cluster, *researcher, {}, honestTile));
    QVERIFY(deliveredProductIsExact(*researcher, inputs));
    QVERIFY2(eachTaskOnce(silent), "a task went back to the silent volunteer");
    QCOMPARE(silent.link->count("task"), std::size_t{16});
    QCOMPARE(countResults(node.store, "method = 'node-compute' AND volunteer_id = 'node' AND "
                                      "verdict = 'accepted' AND attempt = 0"),
             std::int64_t{16});
    QCOMPARE(cluster.coordinator.scheduler().slotsOf(silent.peer), 1);
    QVERIFY(node.logged("no connected volunteer may take it again; the node computes it"));
}

void TestSilentVolunteers::tileThatExpiresThreeTimesIsComputedOnNode() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    std::vector<FakeVolunteer*> silent;
    for (int i = 0; i < 4; ++i)
        silent.push_back(&cluster.connectVolunteer(1, false));
    Inputs inputs;
    const double start = node.now;
    cluster.fromResearcher(inputs.submit(12, 8)); // one tile
    QVERIFY(runUntilDone(node, cluster, *researcher, {}, honestTile));
    QVERIFY(deliveredProductIsExact(*researcher, inputs));
    for (int i = 0; i < 3; ++i)
        QCOMPARE(silent[std::size_t(i)]->link->count("task"), std::size_t{1});
    QCOMPARE(silent[3]->link->count("task"), std::size_t{0}); // untried, yet the node computed it
    QVERIFY(node.logged("its lease expired 3 time(s); the node computes it"));
    QCOMPARE(countResults(node.store, "method = 'node-compute'"), std::int64_t{1});
    // The third expiry, at three lease periods, handed it to the node.
    QCOMPARE(queryInt(node.store, "SELECT CAST(max(at) - " + std::to_string(start) +
                                      " AS INTEGER) FROM lease_losses"),
             static_cast<std::int64_t>(3 * kLease));
    // The attempts of the three leases never repeat; the node's record has attempt 0.
    QCOMPARE(queryInt(node.store, "SELECT count(DISTINCT attempt) FROM task_leases"),
             std::int64_t{3});
}

void TestSilentVolunteers::silentGraphVolunteerBesideAnHonestOne() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    auto& silent = cluster.connectVolunteer(2, true);
    auto& honest = cluster.connectVolunteer(2, true, "opencl-graph");
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 5);
    const double start = node.now;
    cluster.fromResearcher(submitRelu(x));
    QVERIFY(runUntilDone(node, cluster, *researcher, {&honest}, honestRelu));
    const auto done = researcher->sentOfType("job_done");
    QCOMPARE(done.size(), std::size_t{1});
    const core::Tensor expected = relu(x);
    const auto got = done[0].tensors.at(0)->values<float>();
    QVERIFY(std::equal(got.begin(), got.end(), expected.values<float>().begin(),
                       expected.values<float>().end()));
    QVERIFY2(node.now - start <= 2 * kLease, "the job took more than two lease periods");
    QVERIFY2(eachTaskOnce(silent), "a graph task went back to the silent volunteer");
    QVERIFY(silent.link->count("task") >= 1);
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM lease_losses WHERE kind = 'graph' AND "
                                  "why = 'expired' AND volunteer_id = '" +
                                      silent.id() + "'"),
             static_cast<std::int64_t>(silent.link->count("task")));
}

QTEST_APPLESS_MAIN(TestSilentVolunteers)
#include "test_silent_volunteers.moc"
