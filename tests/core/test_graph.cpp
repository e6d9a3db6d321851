// Tests of graph validation and of the JSON wire form (round trip and hostile input).
#include <QtTest/QtTest>

#include <algorithm>
#include <string>

#include "goblin/core/graph/graph_json.hpp"

using goblin::ErrorCode;
using goblin::core::DType;
using namespace goblin::core::graph;
using namespace goblin::core::ops;

namespace {

// x:[2,3] f32, y:[3] f32 → (x + y) summed over dim 1.
Graph smallGraph() {
    Graph graph;
    graph.inputs = {{0, {DType::F32, {2, 3}}}, {1, {DType::F32, {3}}}};
    graph.nodes = {{2, OpCode::Add, {0, 1}, {}},
                   {3, OpCode::Sum, {2}, {{"dims", IntList{1}}, {"keepdim", true}}}};
    graph.outputs = {3};
    return graph;
}

ErrorCode validationError(const Graph& graph, const GraphLimits& limits = {}) {
    auto plan = validateGraph(graph, limits);
    return plan ? ErrorCode::Internal : plan.error().code;
}

ErrorCode decodeError(const std::string& text) {
    auto graph = decodeGraph(text);
    return graph ? ErrorCode::Internal : graph.error().code;
}

} // namespace

class TestGraph : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void validGraphHasOrderAndSpecs() {
        Graph graph = smallGraph();
        std::swap(graph.nodes[0], graph.nodes[1]); // node order need not be topological
        auto plan = validateGraph(graph);
        QVERIFY2(plan.has_value(), plan ? "" : plan.error().message.c_str());
        QCOMPARE(plan->order, (std::vector<std::size_t>{1, 0}));
        QCOMPARE(plan->specs.at(3), (TensorSpec{DType::F32, {2, 1}}));
    }
    // Two independent chains listed one after the other run in the listed order (breadth-first
    // would interleave them: neg 2, neg 4, then their readers), so what a task holds at once is
    // what a planner that listed them counted.
    void aListedOrderTheValuesAllowIsKept() {
        Graph graph;
        graph.inputs = {{0, {DType::F32, {4}}}, {1, {DType::F32, {4}}}};
        graph.nodes = {{2, OpCode::Neg, {0}, {}},
                       {3, OpCode::Exp, {2}, {}},
                       {4, OpCode::Neg, {1}, {}},
                       {5, OpCode::Exp, {4}, {}},
                       {6, OpCode::Add, {3, 5}, {}}};
        graph.outputs = {6};
        auto plan = validateGraph(graph);
        QVERIFY2(plan.has_value(), plan ? "" : plan.error().message.c_str());
        QCOMPARE(plan->order, (std::vector<std::size_t>{0, 1, 2, 3, 4}));
        // Listed with a reader first: it waits for its producers, the rest keep their places.
        std::rotate(graph.nodes.begin(), graph.nodes.begin() + 4, graph.nodes.end());
        plan = validateGraph(graph);
        QVERIFY2(plan.has_value(), plan ? "" : plan.error().message.c_str());
        QCOMPARE(plan->order, (std::vector<std::size_t>{1, 2, 3, 4, 0}));
    }

    void validationErrors() {
        Graph missing = smallGraph();
        missing.nodes[0].args = {0, 9};
        QCOMPARE(validationError(missing), ErrorCode::InvalidInput);
        Graph cycle = smallGraph();
        cycle.nodes[0].args = {0, 3}; // 2 reads 3, 3 reads 2
        auto cyclePlan = validateGraph(cycle);
        QVERIFY(!cyclePlan && cyclePlan.error().message.find("cycle") != std::string::npos);
        Graph mismatch = smallGraph();
        mismatch.inputs[1].spec.dtype = DType::F64;
        QCOMPARE(validationError(mismatch), ErrorCode::UnsupportedDtype);
        Graph badShape = smallGraph();
        badShape.inputs[1].spec.shape = {4};
        QCOMPARE(validationError(badShape), ErrorCode::ShapeMismatch);
        Graph duplicate = smallGraph();
        duplicate.nodes[1].id = 2;
        QCOMPARE(validationError(duplicate), ErrorCode::InvalidInput);
        Graph noOutput = smallGraph();
        noOutput.outputs = {42};
        QCOMPARE(validationError(noOutput), ErrorCode::InvalidInput);
        Graph version = smallGraph();
        version.catalogVersion = 1;
        QCOMPARE(validationError(version), ErrorCode::VersionMismatch);
    }
    void zeroArgAndVariadicNodes() {
        Graph graph;
        graph.inputs = {{0, {DType::F32, {2, 3}}}};
        graph.nodes = {{1,
                        OpCode::DropoutMask,
                        {},
                        {{"shape", IntList{2, 3}}, {"p", 0.5}, {"seed", std::int64_t{7}}}},
                       {2, OpCode::Concat, {0, 1, 0, 1}, {{"dim", std::int64_t{0}}}}};
        graph.outputs = {2};
        auto plan = validateGraph(graph);
        QVERIFY2(plan.has_value(), plan ? "" : plan.error().message.c_str());
        QCOMPARE(plan->order, (std::vector<std::size_t>{0, 1}));
        QCOMPARE(plan->specs.at(2), (TensorSpec{DType::F32, {8, 3}}));
        auto decoded = decodeGraph(encodeGraph(graph));
        QVERIFY2(decoded.has_value(), decoded ? "" : decoded.error().message.c_str());
        QVERIFY(decoded->nodes[0].args.empty());
        QVERIFY(validateGraph(*decoded).has_value());
        Graph tooMany = graph;
        tooMany.nodes[1].args = std::vector<ValueId>(9, 0);
        QCOMPARE(validationError(tooMany), ErrorCode::LimitExceeded);
        GraphLimits narrow;
        narrow.maxArgs = 3;
        QCOMPARE(validationError(graph, narrow), ErrorCode::LimitExceeded);
        Graph noArgs = graph;
        noArgs.nodes[1].args = {};
        QCOMPARE(validationError(noArgs),
                 ErrorCode::InvalidInput); // concat needs at least one input
        Graph withArg = graph;
        withArg.nodes[0].args = {0};
        QCOMPARE(validationError(withArg), ErrorCode::InvalidInput); // dropout_mask takes none
    }
    void oversizeIntermediateIsRefused() {
        Graph graph;
        graph.inputs = {{0, {DType::F32, {1 << 14, 1}}}, {1, {DType::F32, {1, 1 << 14}}}};
        graph.nodes = {{2, OpCode::Mul, {0, 1}, {}}}; // 2^28 floats = 1 GiB
        graph.outputs = {2};
        GraphLimits limits;
        limits.maxValueBytes = std::size_t{1} << 20;
        QCOMPARE(validationError(graph, limits), ErrorCode::LimitExceeded);
        limits.maxNodes = 0;
        QCOMPARE(validationError(graph, limits), ErrorCode::LimitExceeded);
    }
    void jsonRoundTrip() {
        Graph graph = smallGraph();
        auto constant = goblin::core::Tensor::allocate(DType::F32, {3});
        constant->values<float>()[0] = 1.5f;
        constant->values<float>()[1] = std::numeric_limits<float>::quiet_NaN();
        constant->values<float>()[2] = -std::numeric_limits<float>::infinity();
        graph.constants = {{7, *constant}};
        graph.nodes.push_back({8, OpCode::Gelu, {7}, {{"approximate", std::string("tanh")}}});
        graph.nodes.push_back({9, OpCode::Clamp, {7}, {{"min", -0.5}, {"max", std::int64_t{2}}}});
        graph.outputs = {3, 8, 9};
        const std::string text = encodeGraph(graph);
        auto decoded = decodeGraph(text);
        QVERIFY2(decoded.has_value(), decoded ? "" : decoded.error().message.c_str());
        QCOMPARE(encodeGraph(*decoded), text);
        QCOMPARE(decoded->nodes[1].attrs.at("dims"), AttrValue(IntList{1}));
        const auto values = decoded->constants[0].value.values<float>();
        QCOMPARE(values[0], 1.5f);
        QVERIFY(std::isnan(values[1]) && std::isinf(values[2]));
        QVERIFY(validateGraph(*decoded).has_value());
    }
    void doublesSurviveTheWireBitForBit() {
        // Boost.JSON 1.81's own parser reads this one ulp off (found by fuzz_graph_json).
        const double tricky = -1.1677287743379883;
        auto constant = goblin::core::Tensor::allocate(DType::F64, {2}).value();
        constant.values<double>()[0] = tricky;
        constant.values<double>()[1] = 0.1;
        Graph graph;
        graph.constants = {{0, constant}};
        graph.nodes = {{1,
                        OpCode::LayerNorm,
                        {0, 0, 0},
                        {{"normalized_ndim", std::int64_t{1}}, {"eps", tricky}}}};
        graph.outputs = {1};
        auto decoded = decodeGraph(encodeGraph(graph));
        QVERIFY2(decoded.has_value(), decoded ? "" : decoded.error().message.c_str());
        QCOMPARE(decoded->constants[0].value.values<double>()[0], tricky);
        QCOMPARE(decoded->constants[0].value.values<double>()[1], 0.1);
        QCOMPARE(std::get<double>(decoded->nodes[0].attrs.at("eps")), tricky);
        auto tensor =
            decodeTensorJson(R"({"dtype":"f64","shape":[1],"values":[-1.1677287743379883E0]})", 64);
        QCOMPARE(tensor->values<double>()[0], tricky);
    }
    void hostileJson() {
        const std::string head = R"({"catalog":2,"inputs":[{"id":0,"dtype":"f32","shape":[2]}],)";
        QCOMPARE(decodeError("not json"), ErrorCode::InvalidMessage);
        QCOMPARE(decodeError("[1,2]"), ErrorCode::InvalidMessage);
        QCOMPARE(
            decodeError(head + R"("nodes":[{"id":1,"op":"frobnicate","args":[0]}],"outputs":[1]})"),
            ErrorCode::InvalidInput);
        QCOMPARE(decodeError(head + R"("nodes":[{"id":1,"op":"neg","args":["a"]}],"outputs":[1]})"),
                 ErrorCode::InvalidMessage);
        QCOMPARE(decodeError(head + R"("nodes":[],"outputs":[0],"extra":1})"),
                 ErrorCode::InvalidMessage);
        QCOMPARE(
            decodeError(
                R"({"catalog":2,"inputs":[{"id":0,"dtype":"f32","shape":[1,1,1,1,1,1,1,1,1]}],"outputs":[0]})"),
            ErrorCode::LimitExceeded);
        QCOMPARE(
            decodeError(
                R"({"catalog":2,"inputs":[{"id":0,"dtype":"f16","shape":[1]}],"outputs":[0]})"),
            ErrorCode::UnsupportedDtype);
        QCOMPARE(
            decodeError(
                R"({"catalog":2,"constants":[{"id":0,"dtype":"f32","shape":[3],"values":[1]}],"outputs":[0]})"),
            ErrorCode::InvalidMessage);
        QCOMPARE(
            decodeError(
                R"({"catalog":2,"constants":[{"id":0,"dtype":"i32","shape":[1],"values":[3000000000]}],"outputs":[0]})"),
            ErrorCode::InvalidMessage);
        QCOMPARE(
            decodeError(
                R"({"catalog":2,"constants":[{"id":0,"dtype":"f32","shape":[1000000000],"values":[]}],"outputs":[0]})"),
            ErrorCode::LimitExceeded);
        QCOMPARE(decodeError(R"({"catalog":2,"outputs":[[[[[[[[[[0]]]]]]]]]]})"),
                 ErrorCode::InvalidMessage);
        std::string many = head + R"("nodes":[)";
        for (int i = 1; i <= 10'001; ++i) {
            many.append(i > 1 ? R"(,{"id":)" : R"({"id":)");
            many.append(std::to_string(i));
            many.append(R"(,"op":"neg","args":[0]})");
        }
        QCOMPARE(decodeError(many + R"(],"outputs":[1]})"), ErrorCode::LimitExceeded);
    }
};

QTEST_APPLESS_MAIN(TestGraph)
#include "test_graph.moc"
