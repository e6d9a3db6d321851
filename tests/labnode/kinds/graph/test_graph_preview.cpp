// Tests of previewGraphPlan, the node's answer to plan_graph: the plan of a request without
// tensors is the split its submission would get (tasks, stages, the memory of each task, the
// FLOPs), for the volunteers connected now; a micro-batched request says its rows; a weight
// bigger than every volunteer is planned in tiles; the plan says why such a job would wait; a
// request its submission would refuse is refused alike.
#include <QtTest/QtTest>

#include <algorithm>

#include "kinds/graph/graph_chunks.hpp"
#include "kinds/graph/graph_cost.hpp"
#include "kinds/graph/graph_preview.hpp"
#include "support/random_tensors.hpp"

using namespace goblin;
using namespace goblin::labnode;

namespace {

namespace json = boost::json;

constexpr std::int64_t kRows = 8, kWidth = 64; // each 64x64 weight is 16 KiB

// y = relu(x·W1)·W2, x split along its rows.
json::object chainGraph(std::int64_t rows) {
    return json::object{
        {"catalog", 3},
        {"inputs",
         {{{"id", 0}, {"dtype", "f32"}, {"shape", {rows, kWidth}}},
          {{"id", 1}, {"dtype", "f32"}, {"shape", {kWidth, kWidth}}},
          {{"id", 2}, {"dtype", "f32"}, {"shape", {kWidth, kWidth}}}}},
        {"constants", json::array{}},
        {"nodes",
         {{{"id", 3}, {"op", "matmul"}, {"args", {0, 1}}, {"attrs", json::object{}}},
          {{"id", 4}, {"op", "relu"}, {"args", {3}}, {"attrs", json::object{}}},
          {{"id", 5}, {"op", "matmul"}, {"args", {4, 2}}, {"attrs", json::object{}}}}},
        {"outputs", {5}}};
}

json::object chunkedBatch(std::int64_t chunks) {
    return json::object{{"inputs", {0, nullptr, nullptr}}, {"outputs", {0}}, {"chunks", chunks}};
}

net::PlanGraph planOf(json::object batch) {
    return net::PlanGraph{3, chainGraph(kRows), std::move(batch), std::nullopt, std::nullopt};
}

// The same job submitted with its tensors.
GraphSubmission submissionOf(const net::PlanGraph& plan) {
    std::vector<net::TensorPtr> tensors;
    for (const core::Shape& shape :
         {core::Shape{kRows, kWidth}, core::Shape{kWidth, kWidth}, core::Shape{kWidth, kWidth}})
        tensors.push_back(std::make_shared<const core::Tensor>(
            goblin::testing::randomTensor(core::DType::F32, shape, 5)));
    json::object control{{"type", "submit_graph"}, {"graph", plan.graph}};
    if (plan.batch)
        control["batch"] = *plan.batch;
    auto submission = parseGraphSubmission(net::Message{control, tensors}, {});
    if (!submission)
        qFatal("%s", submission.error().message.c_str());
    return std::move(*submission);
}

// Its chunks.
std::vector<GraphChunk> submittedChunks(const net::PlanGraph& plan, std::int64_t budget) {
    auto chunks = splitIntoChunks(submissionOf(plan), 1, {}, StageBudget{budget});
    if (!chunks)
        qFatal("%s", chunks.error().message.c_str());
    return *chunks;
}

} // namespace

class TestGraphPreview : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void thePlanIsTheSplitTheSubmissionGets();
    void aMicroBatchedRequestSaysItsRows();
    void thePlanSaysWhySuchAJobWouldWait();
    void aWeightBiggerThanEveryVolunteerIsPlannedInTiles();
    void aValueBiggerThanEveryVolunteerIsRefused();
    void whatTheSubmissionWouldRefuseIsRefused();
};

void TestGraphPreview::thePlanIsTheSplitTheSubmissionGets() {
    // Two volunteers lending 24 KiB: each range (36 KiB of values) is cut into stages.
    const VolunteerPool pool{2, 24 * 1024, 24 * 1024};
    auto plan = previewGraphPlan(planOf(chunkedBatch(2)), pool, GraphIntakeSettings{});
    QVERIFY2(plan, plan ? "" : plan.error().message.c_str());
    const std::vector<GraphChunk> chunks = submittedChunks(planOf(chunkedBatch(2)), 24 * 1024);
    QVERIFY(chunks.size() > 2); // the budget did cut
    QCOMPARE(plan->id, std::int64_t{3});
    QCOMPARE(plan->tasks, static_cast<std::int64_t>(chunks.size()));
    QCOMPARE(plan->ranges, std::int64_t{2});
    QCOMPARE(plan->opinions, std::int64_t{2});
    QCOMPARE(plan->budgetBytes, std::int64_t{24 * 1024});
    QCOMPARE(plan->volunteers, std::int64_t{2});
    const std::size_t stages = std::max_element(chunks.begin(), chunks.end(),
                                                [](auto& a, auto& b) { return a.stage < b.stage; })
                                   ->stage +
                               1;
    QCOMPARE(plan->stages.size(), stages);
    double flops = 0;
    std::int64_t largest = 0;
    for (const GraphChunk& chunk : chunks) {
        flops += graphFlops(chunk.graph, chunk.plan);
        largest = std::max(largest, chunk.peakBytes);
        QVERIFY(chunk.peakBytes <= plan->stages.at(chunk.stage).maxBytes);
    }
    QCOMPARE(plan->flops, flops);
    QCOMPARE(plan->largestTaskBytes, largest);
    QVERIFY(plan->largestTaskBytes <= plan->budgetBytes);
    QCOMPARE(plan->stages[0].boundaryInBytes, std::int64_t{0});
    QVERIFY(plan->stages.back().boundaryInBytes > 0);
    QVERIFY(plan->boundaryBytes > 0);
    QVERIFY(plan->trafficBytes > 0);
    QVERIFY2(plan->waits.empty(), plan->waits.c_str());
    QVERIFY(plan->whyWhole.empty());

    // Unlimited volunteers: one task per range, nothing handed between stages.
    auto whole = previewGraphPlan(planOf(chunkedBatch(2)), VolunteerPool{2, 0, 0}, {});
    QVERIFY(whole);
    QCOMPARE(whole->tasks, std::int64_t{2});
    QCOMPARE(whole->stages.size(), std::size_t{1});
    QCOMPARE(whole->boundaryBytes, std::int64_t{0});
    QCOMPARE(whole->flops, flops); // cutting changes where it is computed, not what
}

void TestGraphPreview::aMicroBatchedRequestSaysItsRows() {
    json::object batch{{"inputs", {0, nullptr, nullptr}}, {"outputs", {0}}, {"micro_batch", kRows}};
    net::PlanGraph request = planOf(batch);
    request.rows = 3 * kRows;
    auto plan = previewGraphPlan(request, VolunteerPool{1, 0, 0}, {});
    QVERIFY2(plan, plan ? "" : plan.error().message.c_str());
    QCOMPARE(plan->tasks, std::int64_t{3});
    request.rows = 3 * kRows + 1;
    auto uneven = previewGraphPlan(request, VolunteerPool{1, 0, 0}, {});
    QVERIFY(!uneven);
    QCOMPARE(uneven.error().code, ErrorCode::ShapeMismatch);
    QVERIFY2(uneven.error().message.find("not a positive multiple of the micro-batch") !=
                 std::string::npos,
             uneven.error().message.c_str());
    net::PlanGraph unbatched = planOf(chunkedBatch(2));
    unbatched.rows = kRows;
    auto refused = previewGraphPlan(unbatched, VolunteerPool{1, 0, 0}, {});
    QVERIFY(!refused);
    QCOMPARE(refused.error().code, ErrorCode::InvalidInput);
}

void TestGraphPreview::thePlanSaysWhySuchAJobWouldWait() {
    auto nobody = previewGraphPlan(planOf(chunkedBatch(2)), VolunteerPool{}, {});
    QVERIFY(nobody);
    QCOMPARE(nobody->waits, std::string("no graph volunteer is connected now"));
    QCOMPARE(nobody->budgetBytes, GraphIntakeSettings{}.maxTaskBytes);

    // The second volunteer lends 1 KiB: a range's x (1 KiB) alone fills a task, so no tile of a
    // weight fits beside it, and nothing can be cut to fit; the first, lending 64 KiB, could hold
    // any value: such a job waits for a second one like it.
    auto tiny = previewGraphPlan(planOf(chunkedBatch(2)), VolunteerPool{2, 65536, 1024}, {});
    QVERIFY2(tiny, tiny ? "" : tiny.error().message.c_str());
    QCOMPARE(tiny->tasks, std::int64_t{2});
    QCOMPARE(tiny->tiledMatmuls, std::int64_t{0});
    QVERIFY2(tiny->waits.find("no connected volunteer lends the memory its tasks need") !=
                 std::string::npos,
             tiny->waits.c_str());
    QVERIFY2(tiny->waits.find("lends 1 KiB") != std::string::npos, tiny->waits.c_str());
    QVERIFY2(tiny->whyWhole.find("cannot be cut into stages of 1024 bytes") != std::string::npos,
             tiny->whyWhole.c_str());
}

void TestGraphPreview::aWeightBiggerThanEveryVolunteerIsPlannedInTiles() {
    // Volunteers lending 4 KiB: each 16 KiB weight's products become column tiles, each task
    // within the 4 KiB; the plan says how many products were tiled and how many tiles a stage
    // computes.
    auto tiled = previewGraphPlan(planOf(chunkedBatch(2)), VolunteerPool{2, 4096, 4096}, {});
    QVERIFY2(tiled, tiled ? "" : tiled.error().message.c_str());
    QVERIFY2(tiled->waits.empty(), tiled->waits.c_str());
    QCOMPARE(tiled->tiledMatmuls, std::int64_t{2});
    QVERIFY(tiled->largestTaskBytes <= 4096);
    std::int64_t tiles = 0;
    for (const net::PlannedStage& stage : tiled->stages)
        tiles += stage.tiles;
    QVERIFY(tiles >= 2 * 2);
    QVERIFY(tiled->tasks > 2 * 2);
}

void TestGraphPreview::aValueBiggerThanEveryVolunteerIsRefused() {
    // Both lend 1 KiB: a weight (16 KiB) read whole by a matmul that cannot be tiled is bigger
    // than any volunteer, and no split would change that.
    auto refused = previewGraphPlan(planOf(chunkedBatch(2)), VolunteerPool{2, 1024, 1024}, {});
    QVERIFY(!refused);
    QCOMPARE(refused.error().code, ErrorCode::LimitExceeded);
    const std::string& why = refused.error().message;
    QVERIFY2(why.find("(matmul) reads or makes a value of 16384 bytes") != std::string::npos &&
                 why.find("the largest volunteer lends 1024 bytes") != std::string::npos,
             why.c_str());
    // With no volunteer connected, the configured size is the largest.
    GraphIntakeSettings planned;
    planned.planVolunteerBytes = 1024;
    auto configured = previewGraphPlan(planOf(chunkedBatch(2)), VolunteerPool{}, planned);
    QVERIFY(!configured);
    QCOMPARE(configured.error().code, ErrorCode::LimitExceeded);
    // A training round's job waits instead: bigger volunteers may come back between rounds.
    auto waits = planChunks(submissionOf(planOf(chunkedBatch(2))), VolunteerPool{2, 1024, 1024}, {},
                            Unfittable::Waits);
    QVERIFY2(waits, waits ? "" : waits.error().message.c_str());
    QVERIFY(!waits->chunks.at(0).whyWhole.empty());
    QCOMPARE(waits->chunks.at(0).bulkiestValueBytes, std::int64_t{16384});
}

void TestGraphPreview::whatTheSubmissionWouldRefuseIsRefused() {
    GraphIntakeSettings small;
    small.maxTaskBytes = 1024; // no task of the chain fits the node itself, tiled or not
    auto overLimit = previewGraphPlan(planOf(chunkedBatch(2)), VolunteerPool{2, 0, 0}, small);
    QVERIFY(!overLimit);
    QCOMPARE(overLimit.error().code, ErrorCode::LimitExceeded);

    net::PlanGraph badBatch = planOf(json::object{{"inputs", {0, nullptr}}, {"outputs", {0}}});
    auto refused = previewGraphPlan(badBatch, VolunteerPool{}, {});
    QVERIFY(!refused);
    QCOMPARE(refused.error().code, ErrorCode::InvalidInput);

    net::PlanGraph badVerification = planOf(chunkedBatch(2));
    badVerification.verification = "trust-me";
    QCOMPARE(previewGraphPlan(badVerification, VolunteerPool{}, {}).error().code,
             ErrorCode::InvalidInput);

    net::PlanGraph freivalds = planOf(chunkedBatch(2));
    freivalds.verification = "freivalds";
    auto single = previewGraphPlan(freivalds, VolunteerPool{2, 0, 0}, {});
    QVERIFY(single);
    QCOMPARE(single->opinions, std::int64_t{1});
}

QTEST_APPLESS_MAIN(TestGraphPreview)
#include "test_graph_preview.moc"
