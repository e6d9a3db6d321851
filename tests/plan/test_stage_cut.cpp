// Tests of cutIntoStages: every stage fits the budget, the fewest stages are made and cut where
// the fewest bytes cross, and the stages run one after another give the whole graph's bits
// (checked with the reference executor); graphs that cannot be cut get a clear error.
#include <QtTest/QtTest>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "goblin/plan/stage_cut.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "support/parsed_graph.hpp"

using goblin::ErrorCode;
using goblin::core::DType;
using goblin::core::Tensor;
namespace graph = goblin::core::graph;
namespace plan = goblin::plan;
using goblin::testing::ParsedGraph;
using goblin::testing::parseGraph;
using goblin::testing::sameBits;

namespace {

// x[8,64] → matmul w1[64,64] → relu → matmul w2[64,4] (narrow: 128 bytes) → relu →
// matmul w3[4,64] → tanh → matmul w4[64,16]; outputs: the last value, then the narrow one.
constexpr const char* kNarrowWaist = R"({"catalog": 3,
    "inputs": [{"id": 0, "dtype": "f32", "shape": [8, 64]},
               {"id": 1, "dtype": "f32", "shape": [64, 64]},
               {"id": 2, "dtype": "f32", "shape": [64, 4]},
               {"id": 3, "dtype": "f32", "shape": [4, 64]},
               {"id": 4, "dtype": "f32", "shape": [64, 16]}],
    "nodes": [{"id": 10, "op": "matmul", "args": [0, 1], "attrs": {}},
              {"id": 11, "op": "relu", "args": [10], "attrs": {}},
              {"id": 12, "op": "matmul", "args": [11, 2], "attrs": {}},
              {"id": 13, "op": "relu", "args": [12], "attrs": {}},
              {"id": 14, "op": "matmul", "args": [13, 3], "attrs": {}},
              {"id": 15, "op": "tanh", "args": [14], "attrs": {}},
              {"id": 16, "op": "matmul", "args": [15, 4], "attrs": {}}],
    "outputs": [16, 12]})";

std::vector<Tensor> inputsFor(const graph::Graph& g) {
    return goblin::testing::patternedInputs(g, 12345);
}

// Runs the stages one after another as the lab node does, feeding each its sources; returns the
// whole graph's outputs gathered from the stages.
std::vector<Tensor> runStages(const plan::StageCut& cut, const std::vector<Tensor>& inputs) {
    std::vector<std::vector<Tensor>> outputs;
    for (const plan::GraphStage& stage : cut.stages) {
        std::vector<Tensor> given;
        for (const plan::StageSource& source : stage.sources)
            given.push_back(source.kind == plan::StageSource::Kind::GraphInput
                                ? inputs.at(source.index)
                                : outputs.at(source.stage).at(source.output));
        auto stagePlan = graph::validateGraph(stage.graph);
        if (!stagePlan)
            qFatal("a stage does not validate: %s", stagePlan.error().message.c_str());
        auto ran = goblin::reference::runGraph(stage.graph, *stagePlan, given);
        if (!ran)
            qFatal("a stage does not run: %s", ran.error().message.c_str());
        outputs.push_back(std::move(*ran));
    }
    std::vector<Tensor> gathered;
    for (const plan::OutputPlace& place : cut.outputs)
        gathered.push_back(outputs.at(place.stage).at(place.output));
    return gathered;
}

// How jobs were cut before planner 3: every value counted, breadth-first.
const plan::CutRules kEveryValue{plan::StageMeasure::EveryValue, {}, {}};

// x[8,64] through four layers tanh(h·w), w[64,64]: 2 KiB per activation, 16 KiB per weight.
constexpr const char* kFourLayers = R"({"catalog": 3,
    "inputs": [{"id": 0, "dtype": "f32", "shape": [8, 64]},
               {"id": 1, "dtype": "f32", "shape": [64, 64]},
               {"id": 2, "dtype": "f32", "shape": [64, 64]},
               {"id": 3, "dtype": "f32", "shape": [64, 64]},
               {"id": 4, "dtype": "f32", "shape": [64, 64]}],
    "nodes": [{"id": 10, "op": "matmul", "args": [0, 1], "attrs": {}},
              {"id": 11, "op": "tanh", "args": [10], "attrs": {}},
              {"id": 12, "op": "matmul", "args": [11, 2], "attrs": {}},
              {"id": 13, "op": "tanh", "args": [12], "attrs": {}},
              {"id": 14, "op": "matmul", "args": [13, 3], "attrs": {}},
              {"id": 15, "op": "tanh", "args": [14], "attrs": {}},
              {"id": 16, "op": "matmul", "args": [15, 4], "attrs": {}},
              {"id": 17, "op": "tanh", "args": [16], "attrs": {}}],
    "outputs": [17]})";

void checkStagesRunToTheWholeBits(const ParsedGraph& whole, const plan::StageCut& cut) {
    const std::vector<Tensor> inputs = inputsFor(whole.graph);
    auto expected = goblin::reference::runGraph(whole.graph, whole.plan, inputs);
    QVERIFY(expected.has_value());
    const std::vector<Tensor> got = runStages(cut, inputs);
    QCOMPARE(got.size(), expected->size());
    for (std::size_t o = 0; o < got.size(); ++o)
        QVERIFY2(sameBits(got[o], (*expected)[o]), qPrintable(QString::number(o)));
}

} // namespace

class TestStageCut : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aGraphWithinTheBudgetIsOneStage() {
        const ParsedGraph whole = parseGraph(kNarrowWaist);
        const std::int64_t bytes = plan::graphValueBytes(whole.plan);
        auto cut = plan::cutIntoStages(whole.graph, whole.plan, bytes, kEveryValue);
        QVERIFY2(cut.has_value(), cut ? "" : cut.error().message.c_str());
        QCOMPARE(cut->stages.size(), std::size_t{1});
        QCOMPARE(cut->stages[0].graph.nodes.size(), whole.graph.nodes.size());
        QCOMPARE(cut->stages[0].bytes, bytes);
        QCOMPARE(cut->boundaryBytes, std::int64_t{0});
    }

    // 33,536 bytes in all; with 24,000 two stages are the fewest, and of the cuts that make two
    // the one at the 128-byte waist (node 12's value) wins over those at the 2 KiB values.
    void theFewestStagesAreCutWhereTheFewestBytesCross() {
        const ParsedGraph whole = parseGraph(kNarrowWaist);
        const std::int64_t budget = 24'000;
        auto cut = plan::cutIntoStages(whole.graph, whole.plan, budget, kEveryValue);
        QVERIFY2(cut.has_value(), cut ? "" : cut.error().message.c_str());
        QCOMPARE(cut->stages.size(), std::size_t{2});
        for (const plan::GraphStage& stage : cut->stages)
            QVERIFY(stage.bytes <= budget);
        QCOMPARE(cut->boundaryBytes, std::int64_t{8 * 4 * 4});
        const plan::GraphStage& second = cut->stages[1];
        QCOMPARE(second.graph.nodes.front().id, graph::ValueId{13});
        // Stage 0 outputs the researcher's node 12 and hands the same value on; stage 1 reads it.
        QCOMPARE(cut->stages[0].researcherOutputs, std::size_t{1});
        QCOMPARE(second.researcherOutputs, std::size_t{1});
        QCOMPARE(second.sources.front(),
                 (plan::StageSource{plan::StageSource::Kind::Boundary, 0, 0, 1}));
    }

    void stagesRunOneAfterAnotherGiveTheWholeGraphsBits() {
        const ParsedGraph whole = parseGraph(kNarrowWaist);
        const std::vector<Tensor> inputs = inputsFor(whole.graph);
        auto expected = goblin::reference::runGraph(whole.graph, whole.plan, inputs);
        QVERIFY(expected.has_value());
        const std::int64_t total = plan::graphValueBytes(whole.plan);
        // 20,480: x, w1 and their product alone make the first stage.
        for (std::int64_t budget : {total, std::int64_t{24'000}, std::int64_t{20'480}}) {
            auto cut = plan::cutIntoStages(whole.graph, whole.plan, budget, kEveryValue);
            QVERIFY2(cut.has_value(), cut ? "" : cut.error().message.c_str());
            for (const plan::GraphStage& stage : cut->stages)
                QVERIFY2(stage.bytes <= budget, qPrintable(QString::number(budget)));
            const std::vector<Tensor> got = runStages(*cut, inputs);
            QCOMPARE(got.size(), expected->size());
            for (std::size_t o = 0; o < got.size(); ++o)
                QVERIFY2(sameBits(got[o], (*expected)[o]),
                         qPrintable(QStringLiteral("budget %1, output %2").arg(budget).arg(o)));
        }
    }

    // Four equal layers (matmul then tanh) and room for three: every cut crosses 2 KiB, so
    // bytes cannot choose. Without costs the first cut found wins (under a layer, then the rest);
    // with each node's FLOPs the pipeline is balanced, two layers per stage, and the bits stay the
    // same.
    void equallyGoodCutsAreToldApartByTheirHeaviestStage() {
        const ParsedGraph whole = parseGraph(kFourLayers);
        const std::int64_t budget = 64 * 1024; // a stage of k layers holds (2 + 20k) KiB
        plan::CutRules costed = kEveryValue;
        for (const graph::GraphNode& node : whole.graph.nodes)
            costed.nodeCosts.push_back(
                node.op == goblin::core::ops::OpCode::Matmul ? 2.0 * 8 * 64 * 64 : 8.0 * 64);
        auto first = plan::cutIntoStages(whole.graph, whole.plan, budget, kEveryValue);
        auto balanced = plan::cutIntoStages(whole.graph, whole.plan, budget, costed);
        QVERIFY2(first && balanced, first ? "" : first.error().message.c_str());
        QCOMPARE(first->stages.size(), std::size_t{2});
        QCOMPARE(balanced->stages.size(), std::size_t{2});
        QVERIFY(first->stages[0].graph.nodes.size() < 4); // a light first stage, a heavy second
        QCOMPARE(balanced->stages[0].graph.nodes.size(), std::size_t{4});
        QCOMPARE(balanced->stages[1].graph.nodes.front().id, graph::ValueId{14});
        QCOMPARE(balanced->boundaryBytes, first->boundaryBytes);
        for (const plan::GraphStage& stage : balanced->stages)
            QVERIFY(stage.bytes <= budget);
        const std::vector<Tensor> inputs = inputsFor(whole.graph);
        auto expected = goblin::reference::runGraph(whole.graph, whole.plan, inputs);
        QVERIFY(expected.has_value());
        QVERIFY(sameBits(runStages(*balanced, inputs).at(0), expected->at(0)));

        costed.nodeCosts.pop_back();
        auto refused = plan::cutIntoStages(whole.graph, whole.plan, budget, costed);
        QVERIFY(!refused);
        QCOMPARE(refused.error().code, ErrorCode::InvalidInput);
    }

    // What a task holds at once: x and the four weights throughout (67,584 bytes), and at each
    // node its argument and its value (4,096); with the matmuls' values kept to the end (as
    // witnesses) they pile up to 10,240. Every value counted is 83,968.
    void heldAtOnceCountsTheValuesStillToBeRead() {
        const ParsedGraph whole = parseGraph(kFourLayers);
        QCOMPARE(plan::graphValueBytes(whole.plan), std::int64_t{83'968});
        QCOMPARE(plan::heldAtOnce(whole.graph, whole.plan), std::int64_t{67'584 + 4'096});
        std::vector<bool> matmuls;
        for (const graph::GraphNode& node : whole.graph.nodes)
            matmuls.push_back(node.op == goblin::core::ops::OpCode::Matmul);
        QCOMPARE(plan::heldAtOnce(whole.graph, whole.plan, matmuls), std::int64_t{67'584 + 10'240});
    }

    // With 40,000 bytes a stage counted value by value holds one layer (2 + 20 KiB for two would
    // be 42 KiB); held at once, two (2 KiB in, 32 KiB of weights, 4 KiB at its fullest). Each
    // stage holds what its own graph, validated and run, holds at once; the bits are the same.
    void countingWhatIsHeldAtOnceMakesFewerStages() {
        const ParsedGraph whole = parseGraph(kFourLayers);
        const std::int64_t budget = 40'000;
        auto everyValue = plan::cutIntoStages(whole.graph, whole.plan, budget, kEveryValue);
        auto atOnce = plan::cutIntoStages(whole.graph, whole.plan, budget);
        QVERIFY2(everyValue && atOnce, atOnce ? "" : atOnce.error().message.c_str());
        QCOMPARE(everyValue->stages.size(), std::size_t{4});
        QCOMPARE(atOnce->stages.size(), std::size_t{2});
        for (const plan::GraphStage& stage : atOnce->stages) {
            auto stagePlan = graph::validateGraph(stage.graph);
            QVERIFY(stagePlan.has_value());
            QCOMPARE(stage.bytes, plan::heldAtOnce(stage.graph, *stagePlan));
            QCOMPARE(stage.bytes, std::int64_t{2'048 + 32'768 + 4'096});
        }
        checkStagesRunToTheWholeBits(whole, *atOnce);
    }

    // A captured step lists its weights' transposes up front. Counted at once, each runs just
    // before the matmul that reads it, so the cut hands on a 2 KiB activation, and the second
    // stage transposes w2 itself (an input the node has) rather than take the transpose from the
    // first stage. Each stage's listed order is the order it runs in.
    void nodesReadingOnlyInputsRunJustBeforeTheirReader() {
        const ParsedGraph whole = parseGraph(R"({"catalog": 3,
            "inputs": [{"id": 0, "dtype": "f32", "shape": [8, 64]},
                       {"id": 1, "dtype": "f32", "shape": [64, 64]},
                       {"id": 2, "dtype": "f32", "shape": [64, 64]}],
            "nodes": [{"id": 10, "op": "permute", "args": [1], "attrs": {"dims": [1, 0]}},
                      {"id": 11, "op": "permute", "args": [2], "attrs": {"dims": [1, 0]}},
                      {"id": 12, "op": "matmul", "args": [0, 10], "attrs": {}},
                      {"id": 13, "op": "tanh", "args": [12], "attrs": {}},
                      {"id": 14, "op": "matmul", "args": [13, 11], "attrs": {}}],
            "outputs": [14]})");
        auto cut = plan::cutIntoStages(whole.graph, whole.plan, 40'000);
        QVERIFY2(cut.has_value(), cut ? "" : cut.error().message.c_str());
        QCOMPARE(cut->stages.size(), std::size_t{2});
        QCOMPARE(cut->boundaryBytes, std::int64_t{2'048});
        const plan::GraphStage& second = cut->stages[1];
        QVERIFY(std::any_of(second.graph.nodes.begin(), second.graph.nodes.end(),
                            [](const graph::GraphNode& node) { return node.id == 11; }));
        QCOMPARE(second.sources.size(), std::size_t{2});
        QVERIFY(std::find(second.sources.begin(), second.sources.end(),
                          plan::StageSource{plan::StageSource::Kind::GraphInput, 2, 0, 0}) !=
                second.sources.end());
        for (const plan::GraphStage& stage : cut->stages) {
            auto stagePlan = graph::validateGraph(stage.graph);
            QVERIFY(stagePlan.has_value());
            for (std::size_t p = 0; p < stagePlan->order.size(); ++p)
                QCOMPARE(stagePlan->order[p], p);
            QVERIFY(stage.bytes <= 40'000);
        }
        checkStagesRunToTheWholeBits(whole, *cut);
    }

    // A weight that travels flat is reshaped where it is read: read by the first stage and the
    // last, it is never handed on (only the two 2 KiB activations cross), the last stage takes
    // the flat input and reshapes it itself. A node nothing reads is in no stage.
    void aReshapeOfAnInputIsMadeByEachStageThatReadsIt() {
        const ParsedGraph whole = parseGraph(R"({"catalog": 3,
            "inputs": [{"id": 0, "dtype": "f32", "shape": [8, 64]},
                       {"id": 1, "dtype": "f32", "shape": [4096]},
                       {"id": 2, "dtype": "f32", "shape": [64, 64]}],
            "nodes": [{"id": 9, "op": "neg", "args": [0], "attrs": {}},
                      {"id": 10, "op": "reshape", "args": [1], "attrs": {"shape": [64, 64]}},
                      {"id": 11, "op": "matmul", "args": [0, 10], "attrs": {}},
                      {"id": 12, "op": "tanh", "args": [11], "attrs": {}},
                      {"id": 13, "op": "matmul", "args": [12, 2], "attrs": {}},
                      {"id": 14, "op": "tanh", "args": [13], "attrs": {}},
                      {"id": 15, "op": "matmul", "args": [14, 10], "attrs": {}}],
            "outputs": [15]})");
        auto cut = plan::cutIntoStages(whole.graph, whole.plan, 30'000);
        QVERIFY2(cut.has_value(), cut ? "" : cut.error().message.c_str());
        QCOMPARE(cut->stages.size(), std::size_t{3});
        QCOMPARE(cut->boundaryBytes, std::int64_t{2 * 2'048});
        const plan::GraphStage& last = cut->stages.back();
        QVERIFY(std::any_of(last.graph.nodes.begin(), last.graph.nodes.end(),
                            [](const graph::GraphNode& node) { return node.id == 10; }));
        QVERIFY(std::find(last.sources.begin(), last.sources.end(),
                          plan::StageSource{plan::StageSource::Kind::GraphInput, 1, 0, 0}) !=
                last.sources.end());
        for (const plan::GraphStage& stage : cut->stages) {
            QVERIFY(stage.bytes <= 30'000);
            for (const graph::GraphNode& node : stage.graph.nodes)
                QVERIFY(node.id != 9);
        }
        checkStagesRunToTheWholeBits(whole, *cut);
    }

    // Within the budget the four layers are one stage; a task that carries at most 3 tensors
    // makes two, each taking 3 (x or the boundary value, and two weights), to the same bits.
    void aStageTakesNoMoreInputsThanATaskCarries() {
        const ParsedGraph whole = parseGraph(kFourLayers);
        const std::int64_t budget = plan::graphValueBytes(whole.plan);
        auto one = plan::cutIntoStages(whole.graph, whole.plan, budget);
        QVERIFY(one.has_value());
        QCOMPARE(one->stages.size(), std::size_t{1});
        plan::CutRules rules;
        rules.maxStageInputs = 3;
        auto cut = plan::cutIntoStages(whole.graph, whole.plan, budget, rules);
        QVERIFY2(cut.has_value(), cut ? "" : cut.error().message.c_str());
        QCOMPARE(cut->stages.size(), std::size_t{2});
        for (const plan::GraphStage& stage : cut->stages)
            QCOMPARE(stage.graph.inputs.size(), std::size_t{3});
        checkStagesRunToTheWholeBits(whole, *cut);
        rules.maxStageInputs = 0;
        rules.maxStageInputsAndConstants = 3; // the same, counted with constants (none here)
        auto same = plan::cutIntoStages(whole.graph, whole.plan, budget, rules);
        QVERIFY(same.has_value());
        QCOMPARE(same->stages.size(), std::size_t{2});
    }

    // Six outputs of x: a result carrying at most two tensors makes three stages of two.
    void aStageOutputsNoMoreThanAResultCarries() {
        const ParsedGraph whole = parseGraph(R"({"catalog": 3,
            "inputs": [{"id": 0, "dtype": "f32", "shape": [4, 8]}],
            "nodes": [{"id": 1, "op": "neg", "args": [0], "attrs": {}},
                      {"id": 2, "op": "tanh", "args": [0], "attrs": {}},
                      {"id": 3, "op": "relu", "args": [0], "attrs": {}},
                      {"id": 4, "op": "exp", "args": [0], "attrs": {}},
                      {"id": 5, "op": "sigmoid", "args": [0], "attrs": {}},
                      {"id": 6, "op": "abs", "args": [0], "attrs": {}}],
            "outputs": [1, 2, 3, 4, 5, 6]})");
        plan::CutRules rules;
        rules.maxStageOutputs = 2;
        auto cut = plan::cutIntoStages(whole.graph, whole.plan, 1 << 20, rules);
        QVERIFY2(cut.has_value(), cut ? "" : cut.error().message.c_str());
        QCOMPARE(cut->stages.size(), std::size_t{3});
        for (const plan::GraphStage& stage : cut->stages)
            QCOMPARE(stage.graph.outputs.size(), std::size_t{2});
        checkStagesRunToTheWholeBits(whole, *cut);

        // A chain cut in stages hands one value on at each cut: one output per stage is enough.
        const ParsedGraph layers = parseGraph(kFourLayers);
        rules.maxStageOutputs = 1;
        auto narrow = plan::cutIntoStages(layers.graph, layers.plan, 40'000, rules);
        QVERIFY2(narrow.has_value(), narrow ? "" : narrow.error().message.c_str());
        QVERIFY(narrow->stages.size() >= 2);
        for (const plan::GraphStage& stage : narrow->stages)
            QVERIFY(stage.graph.outputs.size() <= 1);
        checkStagesRunToTheWholeBits(layers, *narrow);
    }

    // A value that is an output of the graph and read by a later node is listed twice by the
    // stage that ends between them; with room for one, no cut there: the stage goes on.
    void aStageEndsOnlyWhereItsOutputsFit() {
        const ParsedGraph whole = parseGraph(R"({"catalog": 3,
            "inputs": [{"id": 0, "dtype": "f32", "shape": [64, 64]}],
            "nodes": [{"id": 1, "op": "neg", "args": [0], "attrs": {}},
                      {"id": 2, "op": "tanh", "args": [1], "attrs": {}}],
            "outputs": [1, 2]})");
        plan::CutRules rules;
        rules.maxStageOutputs = 2;
        // 16 KiB per value: a budget of 40 KiB holds x and one more value, not two.
        auto cut = plan::cutIntoStages(whole.graph, whole.plan, 40'000, rules);
        QVERIFY2(cut.has_value(), cut ? "" : cut.error().message.c_str());
        QCOMPARE(cut->stages.size(), std::size_t{2});
        QCOMPARE(cut->stages[0].graph.outputs.size(), std::size_t{2}); // node 1, twice
        rules.maxStageOutputs = 1;
        auto none = plan::cutIntoStages(whole.graph, whole.plan, 40'000, rules);
        QVERIFY(!none.has_value());
        QCOMPARE(none.error().code, ErrorCode::LimitExceeded);
        QVERIFY2(none.error().message.find("outputs") != std::string::npos,
                 none.error().message.c_str());
    }

    void aNodeBiggerThanTheBudgetIsRefused() {
        const ParsedGraph whole = parseGraph(kNarrowWaist);
        auto cut =
            plan::cutIntoStages(whole.graph, whole.plan, 4096, kEveryValue); // w1 alone is 16 KiB
        QVERIFY(!cut.has_value());
        QCOMPARE(cut.error().code, ErrorCode::LimitExceeded);
    }

    void anOutputNoStageComputesIsRefused() {
        const ParsedGraph whole = parseGraph(R"({"catalog": 3,
            "inputs": [{"id": 0, "dtype": "f32", "shape": [2, 3]}],
            "nodes": [{"id": 1, "op": "neg", "args": [0], "attrs": {}}],
            "outputs": [1, 0]})");
        auto cut = plan::cutIntoStages(whole.graph, whole.plan, 1 << 20, kEveryValue);
        QVERIFY(!cut.has_value());
        QCOMPARE(cut.error().code, ErrorCode::InvalidInput);
    }
};

QTEST_APPLESS_MAIN(TestStageCut)
#include "test_stage_cut.moc"
