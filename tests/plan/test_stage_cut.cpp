// Tests of cutIntoStages: every stage fits the budget, the fewest stages are made and cut where
// the fewest bytes cross, and the stages run one after another give the whole graph's bits
// (checked with the reference executor); graphs that cannot be cut get a clear error.
#include <QtTest/QtTest>

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
    std::vector<Tensor> inputs;
    std::uint32_t state = 12345;
    for (const auto& input : g.inputs) {
        Tensor t = Tensor::allocate(input.spec.dtype, input.spec.shape).value();
        for (float& v : t.values<float>()) {
            state = state * 1664525u + 1013904223u;
            v = static_cast<float>(static_cast<int>(state >> 9) % 2001 - 1000) / 1000.0f;
        }
        inputs.push_back(std::move(t));
    }
    return inputs;
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

} // namespace

class TestStageCut : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aGraphWithinTheBudgetIsOneStage() {
        const ParsedGraph whole = parseGraph(kNarrowWaist);
        const std::int64_t bytes = plan::graphValueBytes(whole.plan);
        auto cut = plan::cutIntoStages(whole.graph, whole.plan, bytes);
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
        auto cut = plan::cutIntoStages(whole.graph, whole.plan, budget);
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
            auto cut = plan::cutIntoStages(whole.graph, whole.plan, budget);
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
        const ParsedGraph whole = parseGraph(R"({"catalog": 3,
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
            "outputs": [17]})");
        const std::int64_t budget = 64 * 1024; // a stage of k layers holds (2 + 20k) KiB
        std::vector<double> costs;
        for (std::size_t position : whole.plan.order)
            costs.push_back(whole.graph.nodes[position].op == goblin::core::ops::OpCode::Matmul
                                ? 2.0 * 8 * 64 * 64
                                : 8.0 * 64);
        auto first = plan::cutIntoStages(whole.graph, whole.plan, budget);
        auto balanced = plan::cutIntoStages(whole.graph, whole.plan, budget, costs);
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

        costs.pop_back();
        auto refused = plan::cutIntoStages(whole.graph, whole.plan, budget, costs);
        QVERIFY(!refused);
        QCOMPARE(refused.error().code, ErrorCode::InvalidInput);
    }

    void aNodeBiggerThanTheBudgetIsRefused() {
        const ParsedGraph whole = parseGraph(kNarrowWaist);
        auto cut = plan::cutIntoStages(whole.graph, whole.plan, 4096); // w1 alone is 16 KiB
        QVERIFY(!cut.has_value());
        QCOMPARE(cut.error().code, ErrorCode::LimitExceeded);
    }

    void anOutputNoStageComputesIsRefused() {
        const ParsedGraph whole = parseGraph(R"({"catalog": 3,
            "inputs": [{"id": 0, "dtype": "f32", "shape": [2, 3]}],
            "nodes": [{"id": 1, "op": "neg", "args": [0], "attrs": {}}],
            "outputs": [1, 0]})");
        auto cut = plan::cutIntoStages(whole.graph, whole.plan, 1 << 20);
        QVERIFY(!cut.has_value());
        QCOMPARE(cut.error().code, ErrorCode::InvalidInput);
    }
};

QTEST_APPLESS_MAIN(TestStageCut)
#include "test_stage_cut.moc"
