// Tests of liftEnds: a whole input that only contiguous slices read becomes one input per slice,
// an output that is a (nested) concat of node values becomes one output per part, and the lifted
// graph, given the slices and with its parts concatenated, gives the original graph's bits (the
// reference executor); inputs or concats that other nodes read stay as they are.
#include <QtTest/QtTest>

#include <cstring>
#include <vector>

#include "goblin/plan/lifted_ends.hpp"
#include "goblin/plan/tensor_slices.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "support/lifted_inputs.hpp"
#include "support/parsed_graph.hpp"

using goblin::core::Tensor;
namespace graph = goblin::core::graph;
namespace plan = goblin::plan;
using goblin::testing::madeInputs;
using goblin::testing::ParsedGraph;
using goblin::testing::parseGraph;
using goblin::testing::sameBits;

namespace {

// A training step's shape in small: flat parameters p[10] sliced into w (reshaped 2×3) and b[3];
// outputs o = x·w + b and a flat "gradient", concat(concat(reshape(-w), -b), colsum(o)).
constexpr const char* kStep = R"({"catalog": 3,
    "inputs": [{"id": 0, "dtype": "f32", "shape": [10]},
               {"id": 1, "dtype": "f32", "shape": [4, 2]}],
    "nodes": [{"id": 10, "op": "slice", "args": [0], "attrs": {"dim": 0, "start": 0, "end": 6, "step": 1}},
              {"id": 11, "op": "reshape", "args": [10], "attrs": {"shape": [2, 3]}},
              {"id": 12, "op": "slice", "args": [0], "attrs": {"dim": -1, "start": 6, "end": 9, "step": 1}},
              {"id": 13, "op": "matmul", "args": [1, 11], "attrs": {}},
              {"id": 14, "op": "add", "args": [13, 12], "attrs": {}},
              {"id": 15, "op": "neg", "args": [11], "attrs": {}},
              {"id": 16, "op": "reshape", "args": [15], "attrs": {"shape": [6]}},
              {"id": 17, "op": "neg", "args": [12], "attrs": {}},
              {"id": 18, "op": "concat", "args": [16, 17], "attrs": {"dim": 0}},
              {"id": 19, "op": "sum", "args": [14], "attrs": {"dims": [0], "keepdim": false}},
              {"id": 20, "op": "concat", "args": [18, 19], "attrs": {"dim": -1}}],
    "outputs": [14, 20]})";

Tensor filled(const graph::GraphInput& input, float scale) {
    Tensor t = Tensor::allocate(input.spec.dtype, input.spec.shape).value();
    float value = scale;
    for (float& v : t.values<float>())
        v = (value += 0.37f * scale);
    return t;
}

// Whether a lifted input is one slice [start, end) along dim of its input.
bool isSlice(const plan::LiftedSource& source, std::int64_t dim, std::int64_t start,
             std::int64_t end) {
    namespace ops = goblin::core::ops;
    return source.steps.size() == 1 && source.steps[0].op == ops::OpCode::Slice &&
           ops::attrInt(source.steps[0].attrs, "dim", std::nullopt) == dim &&
           ops::attrInt(source.steps[0].attrs, "start", std::nullopt) == start &&
           ops::attrInt(source.steps[0].attrs, "end", std::nullopt) == end;
}

} // namespace

class TestLiftedEnds : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void slicesBecomeInputsAndConcatsBecomeParts() {
        const ParsedGraph whole = parseGraph(kStep);
        const plan::LiftedEnds lifted = plan::liftEnds(whole.graph, whole.plan);
        QVERIFY(lifted.changed);
        // p's two slices in its place (under the slice nodes' ids), then x.
        QCOMPARE(lifted.graph.inputs.size(), std::size_t{3});
        QCOMPARE(lifted.graph.inputs[0].id, graph::ValueId{10});
        QCOMPARE(lifted.graph.inputs[1].id, graph::ValueId{12});
        QCOMPARE(lifted.graph.inputs[2].id, graph::ValueId{1});
        QVERIFY(isSlice(lifted.inputs[0], 0, 0, 6));
        QVERIFY(isSlice(lifted.inputs[1], -1, 6, 9));
        QVERIFY(lifted.inputs[2].steps.empty() && lifted.inputs[2].input == 1);
        // The nested concat flattened: o, then the gradient's three parts.
        QCOMPARE(lifted.graph.outputs, (std::vector<graph::ValueId>{14, 16, 17, 19}));
        QCOMPARE(lifted.parts.size(), std::size_t{2});
        QCOMPARE(lifted.parts[0].parts, std::size_t{1});
        QCOMPARE(lifted.parts[1].parts, std::size_t{3});
        QCOMPARE(lifted.parts[1].dim, 0);
        QCOMPARE(lifted.outputs[3].output, std::size_t{1});
        QCOMPARE(lifted.outputs[3].part, std::size_t{2});
        auto liftedPlan = graph::validateGraph(lifted.graph);
        QVERIFY2(liftedPlan, liftedPlan ? "" : liftedPlan.error().message.c_str());

        const std::vector<Tensor> inputs{filled(whole.graph.inputs[0], 1.0f),
                                         filled(whole.graph.inputs[1], -0.5f)};
        auto expected = goblin::reference::runGraph(whole.graph, whole.plan, inputs);
        QVERIFY(expected.has_value());
        const std::vector<Tensor> given = madeInputs(lifted, inputs);
        auto ran = goblin::reference::runGraph(lifted.graph, *liftedPlan, given);
        QVERIFY2(ran, ran ? "" : ran.error().message.c_str());
        QVERIFY(sameBits(ran->at(0), expected->at(0)));
        Tensor gradient =
            Tensor::allocate(expected->at(1).dtype(), expected->at(1).shape()).value();
        std::int64_t offset = 0;
        for (std::size_t k = 1; k < 4; ++k) {
            QVERIFY(plan::placeAlong(gradient, ran->at(k), 0, offset).has_value());
            offset += ran->at(k).shape().at(0);
        }
        QVERIFY(sameBits(gradient, expected->at(1)));
    }

    void whatOtherNodesReadStaysAsItIs() {
        // p is also read whole (a neg of it) and the concat has an input among its parts.
        std::string json = kStep;
        json.replace(json.find(R"({"id": 20, "op": "concat", "args": [18, 19])"),
                     std::strlen(R"({"id": 20, "op": "concat", "args": [18, 19])"),
                     R"({"id": 21, "op": "neg", "args": [0], "attrs": {}},
              {"id": 20, "op": "concat", "args": [18, 1])");
        json.replace(json.find(R"("outputs": [14, 20])"), std::strlen(R"("outputs": [14, 20])"),
                     R"("outputs": [14, 20, 21])");
        // concat(18 [9], 1 [4,2]) does not validate: flatten x first.
        json.replace(json.find(R"("args": [18, 1])"), std::strlen(R"("args": [18, 1])"),
                     R"("args": [18, 0])");
        const ParsedGraph whole = parseGraph(json);
        const plan::LiftedEnds lifted = plan::liftEnds(whole.graph, whole.plan);
        QVERIFY(!lifted.changed);
        QCOMPARE(lifted.graph.inputs.size(), whole.graph.inputs.size());
        QCOMPARE(lifted.graph.outputs, whole.graph.outputs);
        QCOMPARE(lifted.graph.nodes.size(), whole.graph.nodes.size());
    }
};

QTEST_APPLESS_MAIN(TestLiftedEnds)
#include "test_lifted_ends.moc"
