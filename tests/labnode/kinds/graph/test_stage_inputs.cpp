// Tests of graph jobs cut into stages, through the Coordinator with fake peers: a two-matmul chain
// over the node's task budget becomes two stages per batch range; a stage is leased only once the
// stage it reads is decided, and gets that stage's decided outputs as its input; when a
// quarantine's recheck replaces a decided stage's outputs, the stage that read them (decided
// already) is computed again from the new ones, so the job ends with the honest bits; a node
// killed between the stages of a chain resumes from the decided ones (on a real SQLite file); a
// job planned for bigger volunteers than those that come is planned again for them.
#include <QtTest/QtTest>

#include <algorithm>
#include <cstring>
#include <set>

#include "labnode/fake_answers.hpp"
#include "support/random_tensors.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

constexpr std::int64_t kRows = 8, kWidth = 64; // each 64x64 weight is 16 KiB

// y = (x·W1)·W2 with x split into two ranges of rows.
net::Message submitChain(const core::Tensor& x, const core::Tensor& w1, const core::Tensor& w2) {
    boost::json::object graph{
        {"catalog", 3},
        {"inputs",
         {{{"id", 0}, {"dtype", "f32"}, {"shape", {kRows, kWidth}}},
          {{"id", 1}, {"dtype", "f32"}, {"shape", {kWidth, kWidth}}},
          {{"id", 2}, {"dtype", "f32"}, {"shape", {kWidth, kWidth}}}}},
        {"constants", boost::json::array{}},
        {"nodes",
         {{{"id", 3}, {"op", "matmul"}, {"args", {0, 1}}, {"attrs", boost::json::object{}}},
          {{"id", 4}, {"op", "matmul"}, {"args", {3, 2}}, {"attrs", boost::json::object{}}}}},
        {"outputs", {4}}};
    return net::Message{
        boost::json::object{
            {"type", "submit_graph"},
            {"id", 7},
            {"graph", std::move(graph)},
            {"batch", {{"inputs", {0, nullptr, nullptr}}, {"outputs", {0}}, {"chunks", 2}}},
            {"tensors", 3}},
        {std::make_shared<const core::Tensor>(x), std::make_shared<const core::Tensor>(w1),
         std::make_shared<const core::Tensor>(w2)}};
}

CoordinatorSettings stagedWithoutAudits() {
    CoordinatorSettings chosen;
    chosen.trust.probationAudits = 0; // decisions by agreement alone: a pair's lie gets through
    chosen.trust.auditFloor = 0.0;
    chosen.trust.sharedAddressRate = 0.0;
    chosen.maxGraphTaskBytes = 24 * 1024; // a range holds 36 KiB: two stages of about 18 KiB
    chosen.secondOpinionWaitSeconds = 0;  // with the pair caught, the node gives second opinions
    return chosen;
}

std::int64_t taskOf(const net::Message& frame) {
    return frame.control.at("task").to_number<std::int64_t>();
}

const net::Message* frameFor(const FakeVolunteer& volunteer, std::int64_t task) {
    static net::Message found;
    for (const net::Message& frame : volunteer.link->sentOfType("task"))
        if (taskOf(frame) == task) {
            found = frame;
            return &found;
        }
    return nullptr;
}

net::Message lieOn(const net::Message& frame) {
    std::vector<core::Tensor> outputs = runTaskGraph(frame);
    outputs.at(0).values<float>()[0] += 0.5f;
    return answerWith(frame, std::move(outputs));
}

net::Message truthOn(const net::Message& frame) {
    return answerWith(frame, runTaskGraph(frame));
}

// Whether the job_done the researcher got holds (x·W1)·W2 as the reference computes it whole.
bool deliveredTheWholeGraphsBits(const FakePeerLink& researcher, const core::Tensor& x,
                                 const core::Tensor& w1, const core::Tensor& w2) {
    const auto g = core::graph::decodeGraph(
        boost::json::serialize(submitChain(x, w1, w2).control.at("graph")));
    const auto plan = core::graph::validateGraph(g.value()).value();
    const std::vector<core::Tensor> inputs{x, w1, w2};
    const auto whole = reference::runGraph(*g, plan, inputs).value();
    const auto done = researcher.sentOfType("job_done");
    return done.size() == 1 && done[0].tensors.size() == 1 &&
           done[0].tensors[0]->shape() == whole[0].shape() &&
           std::memcmp(done[0].tensors[0]->bytes().data(), whole[0].bytes().data(),
                       whole[0].byteSize()) == 0;
}

} // namespace

class TestStageInputs : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aStageIsComputedAgainWhenTheStageItReadIsReplaced();
    void aRestartMidChainResumesFromTheDecidedStages();
    void aJobNoVolunteerHasTheMemoryForIsPlannedAgain();
};

void TestStageInputs::aStageIsComputedAgainWhenTheStageItReadIsReplaced() {
    NodeHarness node;
    FakeCluster cluster(node, stagedWithoutAudits());
    auto researcher = cluster.connectResearcher();
    auto& one = cluster.connectVolunteer(2, true, "opencl-graph", "10.0.0.1");
    auto& two = cluster.connectVolunteer(2, true, "opencl-graph", "10.0.0.2");
    const core::Tensor x = goblin::testing::randomTensor(core::DType::F32, {kRows, kWidth}, 3);
    const core::Tensor w1 = goblin::testing::randomTensor(core::DType::F32, {kWidth, kWidth}, 4);
    const core::Tensor w2 = goblin::testing::randomTensor(core::DType::F32, {kWidth, kWidth}, 5);
    cluster.fromResearcher(submitChain(x, w1, w2));
    QVERIFY(node.waitUntil([&] { return researcher->count("job_accepted") == 1; }));
    std::vector<std::int64_t> tasks;
    for (std::int64_t chunk = 0; chunk < 4; ++chunk)
        tasks.push_back(queryInt(node.store, "SELECT id FROM graph_tasks WHERE chunk = " +
                                                 std::to_string(chunk)));
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_tasks"), std::int64_t{4});
    // Range 0: stage 0 then stage 1; range 1 likewise. Only the first stages are leased.
    QVERIFY(node.waitUntil([&] { return one.link->count("task") == 2; }));
    QVERIFY(two.link->count("task") == 2);
    QVERIFY(!frameFor(one, tasks[1]) && !frameFor(one, tasks[3]));

    // The pair agrees on a lie in range 0's first stage: with no audits it is decided.
    cluster.coordinator.onMessage(one.peer, lieOn(*frameFor(one, tasks[0])));
    cluster.coordinator.onMessage(two.peer, lieOn(*frameFor(two, tasks[0])));
    QVERIFY(node.waitUntil([&] { return frameFor(one, tasks[1]) && frameFor(two, tasks[1]); }));
    const net::Message secondStage = *frameFor(one, tasks[1]);
    QCOMPARE(secondStage.tensors.size(), std::size_t{2}); // the boundary value and W2
    const core::Tensor handedOn = *secondStage.tensors[0];
    // It reads the stage's decided outputs: the lie.
    QCOMPARE(handedOn.values<float>()[0],
             runTaskGraph(*frameFor(two, tasks[0]))[0].values<float>()[0] + 0.5f);
    cluster.coordinator.onMessage(one.peer, truthOn(secondStage));
    cluster.coordinator.onMessage(two.peer, truthOn(*frameFor(two, tasks[1])));
    QVERIFY(node.waitUntil([&] {
        return queryInt(node.store, "SELECT count(*) FROM graph_tasks WHERE state = 'accepted'") ==
               2;
    }));

    // One of the pair is caught in range 1: the recheck replaces stage 0's outputs, and stage 1,
    // decided from the lie, is computed again.
    cluster.coordinator.onMessage(one.peer, misshapenResult(*frameFor(one, tasks[2])));
    cluster.coordinator.onMessage(two.peer, truthOn(*frameFor(two, tasks[2])));
    auto& third = cluster.connectVolunteer(2, true, "cpu-eigen", "10.0.0.3");
    QVERIFY(node.waitUntil([&] {
        cluster.answer(third, truthOn);
        return researcher->count("job_done") == 1;
    }));
    QVERIFY(quarantined(node, one.id()));
    QVERIFY(quarantined(node, two.id()));

    QVERIFY(deliveredTheWholeGraphsBits(*researcher, x, w1, w2));
    // Stage 1's first verdicts stand (its volunteers computed what they were given); its outputs
    // were not kept: the output above is the honest one.
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE task_id = " +
                                      std::to_string(tasks[1]) +
                                      " AND attempt <= 2 AND verdict = 'accepted'"),
             std::int64_t{2});
    QVERIFY(node.logged("1 task(s) read outputs the node replaced; they are computed again"));
}

// The first stages are decided, the node dies, and a new node on the same database and blobs
// hands the second stages their stored inputs: no decided stage is computed again, and the job
// has the whole graph's bits.
void TestStageInputs::aRestartMidChainResumesFromTheDecidedStages() {
    const NodeFiles files;
    const core::Tensor x = goblin::testing::randomTensor(core::DType::F32, {kRows, kWidth}, 13);
    const core::Tensor w1 = goblin::testing::randomTensor(core::DType::F32, {kWidth, kWidth}, 14);
    const core::Tensor w2 = goblin::testing::randomTensor(core::DType::F32, {kWidth, kWidth}, 15);
    std::string job;
    std::vector<std::int64_t> firstStages;
    {
        NodeHarness node(files.db, files.blobs);
        FakeCluster cluster(node, stagedWithoutAudits());
        auto researcher = cluster.connectResearcher();
        auto& one = cluster.connectVolunteer(2, true, "cpu-eigen", "10.0.0.1");
        auto& two = cluster.connectVolunteer(2, true, "opencl-graph", "10.0.0.2");
        cluster.fromResearcher(submitChain(x, w1, w2));
        QVERIFY(node.waitUntil([&] { return researcher->count("job_accepted") == 1; }));
        job =
            std::string(researcher->sentOfType("job_accepted").at(0).control.at("job").as_string());
        QVERIFY(node.waitUntil([&] { return one.link->count("task") == 2; }));
        for (const net::Message& frame : one.link->sentOfType("task"))
            firstStages.push_back(taskOf(frame));
        cluster.answer(one, truthOn);
        cluster.answer(two, truthOn);
        // Both first stages decided: the second stages are leased when the node dies.
        QVERIFY(node.waitUntil([&] { return one.link->count("task") == 4; }));
    }
    NodeHarness node(files.db, files.blobs);
    FakeCluster cluster(node, stagedWithoutAudits());
    QVERIFY(node.logged("graph job " + job + " resumed: 2 of 4 task(s) already decided"));
    auto researcher = cluster.connectResearcher();
    auto& one = cluster.connectVolunteer(2, true, "cpu-eigen", "10.0.0.1");
    auto& two = cluster.connectVolunteer(2, true, "opencl-graph", "10.0.0.2");
    cluster.fromResearcher(control({{"type", "fetch"}, {"id", 3}, {"job", job}}));
    QVERIFY(node.waitUntil([&] {
        cluster.answer(one, truthOn);
        cluster.answer(two, truthOn);
        return researcher->count("job_done") == 1;
    }));
    for (auto* volunteer : {&one, &two})
        for (const net::Message& frame : volunteer->link->sentOfType("task"))
            QVERIFY2(std::find(firstStages.begin(), firstStages.end(), taskOf(frame)) ==
                         firstStages.end(),
                     "a decided stage was computed again");
    QVERIFY(deliveredTheWholeGraphsBits(*researcher, x, w1, w2));
}

// Planned (with no volunteer connected) for volunteers lending 1 GiB, the chain is two whole
// tasks; the volunteers that come lend 24 KiB. At the staff check the node cuts it again for them,
// they compute the stages, and the job has the whole graph's bits.
void TestStageInputs::aJobNoVolunteerHasTheMemoryForIsPlannedAgain() {
    NodeHarness node;
    CoordinatorSettings chosen = stagedWithoutAudits();
    chosen.maxGraphTaskBytes = std::int64_t{1} << 30;
    chosen.planVolunteerBytes = std::int64_t{1} << 30;
    FakeCluster cluster(node, chosen);
    auto researcher = cluster.connectResearcher();
    const core::Tensor x = goblin::testing::randomTensor(core::DType::F32, {kRows, kWidth}, 23);
    const core::Tensor w1 = goblin::testing::randomTensor(core::DType::F32, {kWidth, kWidth}, 24);
    const core::Tensor w2 = goblin::testing::randomTensor(core::DType::F32, {kWidth, kWidth}, 25);
    cluster.fromResearcher(submitChain(x, w1, w2));
    QVERIFY(node.waitUntil([&] { return researcher->count("job_accepted") == 1; }));
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_tasks"), std::int64_t{2});
    std::vector<std::shared_ptr<FakePeerLink>> links;
    for (std::uint64_t peer : {60, 61}) {
        net::Message hello = volunteerHello(2, true);
        hello.control["capabilities"].as_object()["memory_bytes"] = 24 * 1024;
        links.push_back(std::make_shared<FakePeerLink>());
        cluster.coordinator.onConnected(peer, links.back(), PeerRole::Volunteer);
        cluster.coordinator.onMessage(peer, hello);
    }
    std::set<std::string> answered;
    const auto answerAll = [&] {
        for (std::size_t v = 0; v < links.size(); ++v)
            for (const net::Message& frame : links[v]->sentOfType("task")) {
                const std::string key =
                    std::to_string(v) + "/" + std::to_string(taskOf(frame)) + "/" +
                    std::to_string(frame.control.at("attempt").to_number<std::int64_t>());
                if (answered.insert(key).second)
                    cluster.coordinator.onMessage(60 + v, truthOn(frame));
            }
    };
    QVERIFY(node.waitUntil([&] {
        answerAll();
        return researcher->count("job_done") == 1;
    }));
    QVERIFY(node.logged("planned again for the connected volunteers: 4 task(s)"));
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_tasks"), std::int64_t{4});
    QVERIFY(deliveredTheWholeGraphsBits(*researcher, x, w1, w2));
}

QTEST_APPLESS_MAIN(TestStageInputs)
#include "test_stage_inputs.moc"
