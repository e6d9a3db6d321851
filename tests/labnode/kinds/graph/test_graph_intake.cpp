// Tests of a graph job's intake and reload: a job is reloaded with the cut it was planned with.
// A chain whose four 64×64 weights travel as one flat vector (16 KiB each, 64 KiB in all) is cut
// for a 48 KiB budget: this planner lifts the vector's slices into the stages that read them, so
// the range becomes stages; a job stored before the planner did that (its request has no
// stage_planner) stays whole, as it was planned, when it is loaded again.
#include <QtTest/QtTest>

#include <boost/json.hpp>

#include "goblin/core/precise_json.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "kinds/graph/graph_intake.hpp"
#include "support/parsed_graph.hpp"
#include "support/random_tensors.hpp"

using namespace goblin;
using namespace goblin::labnode;

namespace {

namespace json = boost::json;

constexpr std::int64_t kWidth = 64, kLayers = 4, kBudget = 48 * 1024;

net::Message flatWeightChain() {
    json::array nodes;
    std::int64_t next = 2, h = 1;
    for (std::int64_t l = 0; l < kLayers; ++l) {
        const std::int64_t slice = next++, weight = next++, product = next++, activated = next++;
        const std::int64_t start = l * kWidth * kWidth;
        nodes.push_back(
            {{"id", slice},
             {"op", "slice"},
             {"args", {0}},
             {"attrs",
              {{"dim", 0}, {"start", start}, {"end", start + kWidth * kWidth}, {"step", 1}}}});
        nodes.push_back({{"id", weight},
                         {"op", "reshape"},
                         {"args", {slice}},
                         {"attrs", {{"shape", {kWidth, kWidth}}}}});
        nodes.push_back(
            {{"id", product}, {"op", "matmul"}, {"args", {h, weight}}, {"attrs", json::object{}}});
        nodes.push_back(
            {{"id", activated}, {"op", "tanh"}, {"args", {product}}, {"attrs", json::object{}}});
        h = activated;
    }
    json::object graph{{"catalog", 3},
                       {"inputs",
                        {{{"id", 0}, {"dtype", "f32"}, {"shape", {kLayers * kWidth * kWidth}}},
                         {{"id", 1}, {"dtype", "f32"}, {"shape", {8, kWidth}}}}},
                       {"constants", json::array{}},
                       {"nodes", std::move(nodes)},
                       {"outputs", {h}}};
    return net::Message{
        json::object{
            {"type", "submit_graph"}, {"id", 1}, {"graph", std::move(graph)}, {"tensors", 2}},
        {std::make_shared<const core::Tensor>(
             goblin::testing::randomTensor(core::DType::F32, {kLayers * kWidth * kWidth}, 3)),
         std::make_shared<const core::Tensor>(
             goblin::testing::randomTensor(core::DType::F32, {8, kWidth}, 4))}};
}

std::vector<std::string> graphsOf(const std::vector<GraphChunk>& chunks) {
    std::vector<std::string> graphs;
    for (const GraphChunk& chunk : chunks)
        graphs.push_back(chunk.json);
    return graphs;
}

} // namespace

class TestGraphIntake : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aJobReloadsWithTheCutItWasPlannedWith();
    void liftingAloneCanMakeARangeFitOneTask();
};

void TestGraphIntake::aJobReloadsWithTheCutItWasPlannedWith() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const BlobStore blobs(dir.filePath(QStringLiteral("blobs")).toStdString());
    const GraphIntakeSettings settings;
    auto intake =
        takeInGraph(flatWeightChain(), VolunteerPool{2, kBudget, kBudget}, settings, blobs);
    QVERIFY2(intake, intake ? "" : intake.error().message.c_str());
    QVERIFY(intake->chunks.size() > 1); // the lifted slices let the chain be cut
    GraphJobRow row{"g-now",
                    1,
                    JobState::Running,
                    static_cast<std::int64_t>(intake->chunks.size()),
                    intake->request,
                    intake->inputs,
                    0,
                    {}};
    auto reloaded = reloadGraphIntake(row, settings, blobs);
    QVERIFY2(reloaded, reloaded ? "" : reloaded.error().message.c_str());
    QCOMPARE(graphsOf(reloaded->chunks), graphsOf(intake->chunks));

    // The same job as a node before this planner stored it: no stage_planner in its request.
    json::error_code ec;
    json::value request = core::parsePrecise(intake->request, ec);
    QVERIFY(!ec && request.is_object());
    QVERIFY(request.as_object().erase("stage_planner") == 1);
    row.request = json::serialize(request);
    row.tasks = 1;
    auto old = reloadGraphIntake(row, settings, blobs);
    QVERIFY2(old, old ? "" : old.error().message.c_str());
    QCOMPARE(old->chunks.size(), std::size_t{1}); // the whole vector never fit: it stayed whole
    QVERIFY(!old->chunks[0].whyWhole.empty());

    // Stored by planner 2 (every value counted, the reshapes up front): more stages than planner
    // 3 makes (two layers each).
    request.as_object()["stage_planner"] = 2;
    row.request = json::serialize(request);
    row.tasks = static_cast<std::int64_t>(intake->chunks.size());
    auto second = reloadGraphIntake(row, settings, blobs);
    QVERIFY2(second, second ? "" : second.error().message.c_str());
    auto expected =
        splitIntoChunks(intake->submission, 1, settings.limits, StageBudget{kBudget, 2});
    QVERIFY(expected.has_value());
    QCOMPARE(graphsOf(second->chunks), graphsOf(*expected));
    QCOMPARE(intake->chunks.size(), std::size_t{kLayers / 2});
    QVERIFY(second->chunks.size() > intake->chunks.size());
}

// Held at once, 92 KiB whole (x and the 64 KiB vector throughout, a 16 KiB slice at a time, the
// matmuls' values kept as witnesses), 76 KiB once the node slices the vector (a slice's reshape
// shares its storage): for an 80 KiB budget the range is one task of the lifted graph, which
// computes the whole graph's bits.
void TestGraphIntake::liftingAloneCanMakeARangeFitOneTask() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const BlobStore blobs(dir.filePath(QStringLiteral("blobs")).toStdString());
    const net::Message message = flatWeightChain();
    const std::int64_t budget = 80 * 1024;
    auto intake = takeInGraph(message, VolunteerPool{2, budget, budget}, {}, blobs);
    QVERIFY2(intake, intake ? "" : intake.error().message.c_str());
    QCOMPARE(intake->chunks.size(), std::size_t{1});
    const GraphChunk& task = intake->chunks[0];
    QVERIFY(task.peakBytes <= budget);
    QCOMPARE(task.graph.inputs.size(), static_cast<std::size_t>(kLayers + 1)); // 4 slices and x
    QVERIFY(task.whyWhole.empty());

    std::vector<core::Tensor> given;
    for (const net::TensorPtr& input : task.inputs)
        given.push_back(*input);
    auto computed = reference::runGraph(task.graph, task.plan, given);
    QVERIFY2(computed, computed ? "" : computed.error().message.c_str());
    auto merged = mergeChunkOutputs(intake->submission, intake->chunks, {*computed});
    QVERIFY2(merged, merged ? "" : merged.error().message.c_str());
    auto whole = reference::runGraph(intake->submission.graph, intake->submission.plan,
                                     valuesOf(message.tensors));
    QVERIFY(whole.has_value());
    QVERIFY(goblin::testing::sameBits(merged->at(0), whole->at(0)));
}

QTEST_APPLESS_MAIN(TestGraphIntake)
#include "test_graph_intake.moc"
