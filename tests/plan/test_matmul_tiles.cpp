// Tests of tileWideMatmuls and of lifting through views: a linear layer's forward, input
// gradient and weight gradient, each too big for the budget, become tiles that give the original
// graph's bits (reference executor); lifted through the weight's reshape and transpose, no input
// is the whole parameter vector, and the graph that could not be cut into stages of the budget
// now is, every stage within it, the stages giving the original bits. Matmuls that fit, or whose
// other operand alone is too big, are left as they are.
#include <QtTest/QtTest>

#include <algorithm>
#include <vector>

#include "goblin/plan/lifted_ends.hpp"
#include "goblin/plan/matmul_tiles.hpp"
#include "goblin/plan/stage_cut.hpp"
#include "goblin/plan/tensor_slices.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "support/lifted_inputs.hpp"
#include "support/parsed_graph.hpp"

using goblin::core::Tensor;
namespace graph = goblin::core::graph;
namespace plan = goblin::plan;
using goblin::core::ops::OpCode;
using goblin::testing::madeInputs;
using goblin::testing::ParsedGraph;
using goblin::testing::parseGraph;
using goblin::testing::sameBits;

namespace {

// A linear layer's step: flat parameters p = [w (64×32) | b (64)], x[4,32], the output's
// gradient g[4,64]. Outputs: y = x·wᵀ, dx = g·w and the flat gradient concat(gᵀ·x, −b).
// w is 8 KiB: each of the three products holds more than a 6 KiB budget.
constexpr const char* kLayer = R"({"catalog": 3,
    "inputs": [{"id": 0, "dtype": "f32", "shape": [2112]},
               {"id": 1, "dtype": "f32", "shape": [4, 32]},
               {"id": 2, "dtype": "f32", "shape": [4, 64]}],
    "nodes": [{"id": 10, "op": "slice", "args": [0], "attrs": {"dim": 0, "start": 0, "end": 2048, "step": 1}},
              {"id": 11, "op": "reshape", "args": [10], "attrs": {"shape": [64, 32]}},
              {"id": 12, "op": "permute", "args": [11], "attrs": {"dims": [1, 0]}},
              {"id": 13, "op": "matmul", "args": [1, 12], "attrs": {}},
              {"id": 14, "op": "matmul", "args": [2, 11], "attrs": {}},
              {"id": 15, "op": "permute", "args": [2], "attrs": {"dims": [1, 0]}},
              {"id": 16, "op": "matmul", "args": [15, 1], "attrs": {}},
              {"id": 17, "op": "reshape", "args": [16], "attrs": {"shape": [2048]}},
              {"id": 18, "op": "slice", "args": [0], "attrs": {"dim": 0, "start": 2048, "end": 2112, "step": 1}},
              {"id": 19, "op": "neg", "args": [18], "attrs": {}},
              {"id": 20, "op": "concat", "args": [17, 19], "attrs": {"dim": 0}}],
    "outputs": [13, 14, 20]})";

constexpr std::int64_t kBudget = 6 * 1024;

std::vector<Tensor> inputsFor(const graph::Graph& g) {
    return goblin::testing::patternedInputs(g, 777);
}

std::vector<Tensor> run(const graph::Graph& g, const std::vector<Tensor>& inputs) {
    auto validated = graph::validateGraph(g);
    if (!validated)
        qFatal("does not validate: %s", validated.error().message.c_str());
    auto ran = goblin::reference::runGraph(g, *validated, inputs);
    if (!ran)
        qFatal("does not run: %s", ran.error().message.c_str());
    return std::move(*ran);
}

std::size_t count(const graph::Graph& g, OpCode op) {
    return static_cast<std::size_t>(std::count_if(
        g.nodes.begin(), g.nodes.end(), [op](const graph::GraphNode& n) { return n.op == op; }));
}

// The original graph's outputs from the lifted graph's, parts joined along their dims.
std::vector<Tensor> joined(const plan::LiftedEnds& lifted, const std::vector<Tensor>& outputs,
                           const std::vector<Tensor>& like) {
    std::vector<Tensor> whole;
    for (const Tensor& t : like)
        whole.push_back(Tensor::allocate(t.dtype(), t.shape()).value());
    std::vector<std::int64_t> offsets(like.size(), 0);
    for (std::size_t o = 0; o < outputs.size(); ++o) {
        const plan::LiftedOutput& place = lifted.outputs[o];
        const int dim = lifted.parts[place.output].dim;
        if (!plan::placeAlong(whole[place.output], outputs[o], dim, offsets[place.output]))
            qFatal("a part does not fit its output");
        offsets[place.output] += outputs[o].shape().at(static_cast<std::size_t>(dim));
    }
    return whole;
}

} // namespace

class TestMatmulTiles : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void productsTooBigForTheBudgetBecomeTilesWithTheSameBits() {
        const ParsedGraph whole = parseGraph(kLayer);
        const plan::TiledGraph tiled = plan::tileWideMatmuls(whole.graph, whole.plan, kBudget);
        QCOMPARE(tiled.tiledNodes, std::size_t{3});
        QVERIFY(count(tiled.graph, OpCode::Matmul) > 3 * 2);
        QCOMPARE(tiled.graph.outputs, whole.graph.outputs);
        const auto inputs = inputsFor(whole.graph);
        const auto want = run(whole.graph, inputs);
        const auto got = run(tiled.graph, inputs);
        QCOMPARE(got.size(), want.size());
        for (std::size_t o = 0; o < want.size(); ++o)
            QVERIFY2(sameBits(got[o], want[o]), std::to_string(o).c_str());
        // Each tile, with what it reads, holds at most half the budget.
        auto tiledPlan = graph::validateGraph(tiled.graph);
        QVERIFY(tiledPlan.has_value());
        for (const graph::GraphNode& node : tiled.graph.nodes) {
            if (node.op != OpCode::Matmul)
                continue;
            std::int64_t held = plan::specBytes(tiledPlan->specs.at(node.id));
            for (graph::ValueId arg : node.args)
                held += plan::specBytes(tiledPlan->specs.at(arg));
            QVERIFY2(held <= kBudget / 2, std::to_string(held).c_str());
        }
    }

    void liftedThroughViewsTheTilesCutIntoStagesWithinTheBudget() {
        const ParsedGraph whole = parseGraph(kLayer);
        // Untiled, the forward product alone is over the budget.
        QVERIFY(!plan::cutIntoStages(whole.graph, whole.plan, kBudget).has_value());
        const plan::TiledGraph tiled = plan::tileWideMatmuls(whole.graph, whole.plan, kBudget);
        const auto tiledPlan = graph::validateGraph(tiled.graph).value();
        const plan::LiftedEnds lifted =
            plan::liftEnds(tiled.graph, tiledPlan, {.throughViews = true});
        QVERIFY(lifted.changed);
        // Nothing takes p whole: its blocks are made by the node (slice, reshape, permute, slice).
        for (const plan::LiftedSource& source : lifted.inputs)
            QVERIFY(source.input != 0 || !source.steps.empty());
        QVERIFY(std::any_of(lifted.inputs.begin(), lifted.inputs.end(),
                            [](const plan::LiftedSource& s) { return s.steps.size() == 4; }));
        // The weight gradient's row blocks and −b are parts of the flat gradient.
        QCOMPARE(lifted.parts.size(), std::size_t{3});
        QVERIFY(lifted.parts[2].parts > 2);
        const auto liftedPlan = graph::validateGraph(lifted.graph);
        QVERIFY2(liftedPlan, liftedPlan ? "" : liftedPlan.error().message.c_str());

        const auto inputs = inputsFor(whole.graph);
        const auto want = run(whole.graph, inputs);
        const auto given = madeInputs(lifted, inputs);
        const auto liftedOut = joined(lifted, run(lifted.graph, given), want);
        for (std::size_t o = 0; o < want.size(); ++o)
            QVERIFY2(sameBits(liftedOut[o], want[o]), std::to_string(o).c_str());

        auto cut = plan::cutIntoStages(lifted.graph, *liftedPlan, kBudget);
        QVERIFY2(cut, cut ? "" : cut.error().message.c_str());
        QVERIFY(cut->stages.size() >= 2);
        std::vector<std::vector<Tensor>> outputs;
        for (const plan::GraphStage& stage : cut->stages) {
            QVERIFY2(stage.bytes <= kBudget, std::to_string(stage.bytes).c_str());
            std::vector<Tensor> stageInputs;
            for (const plan::StageSource& source : stage.sources)
                stageInputs.push_back(source.kind == plan::StageSource::Kind::GraphInput
                                          ? given.at(source.index)
                                          : outputs.at(source.stage).at(source.output));
            outputs.push_back(run(stage.graph, stageInputs));
        }
        std::vector<Tensor> gathered;
        for (const plan::OutputPlace& place : cut->outputs)
            gathered.push_back(outputs.at(place.stage).at(place.output));
        const auto staged = joined(lifted, gathered, want);
        for (std::size_t o = 0; o < want.size(); ++o)
            QVERIFY2(sameBits(staged[o], want[o]), std::to_string(o).c_str());
    }

    void moreTilesThanANodeTakesAreJoinedInATreeOfConcats() {
        // At 3 KiB the forward product needs 9 column blocks; a concat takes at most 8 args.
        const ParsedGraph whole = parseGraph(kLayer);
        const plan::TiledGraph tiled = plan::tileWideMatmuls(whole.graph, whole.plan, 3 * 1024);
        QCOMPARE(tiled.tiledNodes, std::size_t{3});
        QVERIFY(count(tiled.graph, OpCode::Matmul) > 9);
        for (const graph::GraphNode& node : tiled.graph.nodes)
            QVERIFY(node.args.size() <= graph::GraphLimits{}.maxArgs);
        const auto inputs = inputsFor(whole.graph);
        const auto want = run(whole.graph, inputs);
        const auto got = run(tiled.graph, inputs);
        for (std::size_t o = 0; o < want.size(); ++o)
            QVERIFY2(sameBits(got[o], want[o]), std::to_string(o).c_str());
        // The flat gradient's nested concats still come apart into its blocks.
        const plan::LiftedEnds lifted = plan::liftEnds(
            tiled.graph, graph::validateGraph(tiled.graph).value(), {.throughViews = true});
        QVERIFY(lifted.parts[2].parts > 8);
    }

    void productsThatFitAreLeftAsTheyAre() {
        const ParsedGraph whole = parseGraph(kLayer);
        const plan::TiledGraph tiled = plan::tileWideMatmuls(whole.graph, whole.plan, 64 * 1024);
        QCOMPARE(tiled.tiledNodes, std::size_t{0});
        QCOMPARE(tiled.graph.nodes.size(), whole.graph.nodes.size());
    }

    void aProductWhoseOtherOperandIsTooBigIsLeftAsItIs() {
        // With 2 KiB, half the budget is below x·wᵀ's x alone plus a block: x[4,32] is 512 B, a
        // column of wᵀ and of y 384 B; below that no cut fits, and no tile is made.
        const ParsedGraph whole = parseGraph(kLayer);
        const plan::TiledGraph tiled = plan::tileWideMatmuls(whole.graph, whole.plan, 1000);
        QCOMPARE(count(tiled.graph, OpCode::Matmul), std::size_t{3});
        QCOMPARE(tiled.tiledNodes, std::size_t{0});
    }

    void aThroughViewsLiftKeepsAnInputWholeThatANonViewReads() {
        // p is also read whole by a neg: nothing of p is lifted; x and g stay as they are.
        ParsedGraph whole = parseGraph(kLayer);
        whole.graph.nodes.push_back(graph::GraphNode{30, OpCode::Neg, {0}, {}});
        whole.graph.outputs.push_back(30);
        whole.plan = graph::validateGraph(whole.graph).value();
        const plan::LiftedEnds lifted =
            plan::liftEnds(whole.graph, whole.plan, {.throughViews = true});
        for (const plan::LiftedSource& source : lifted.inputs)
            QVERIFY(source.steps.empty());
    }
};

QTEST_APPLESS_MAIN(TestMatmulTiles)
#include "test_matmul_tiles.moc"
