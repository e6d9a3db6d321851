// Tests of graphFlops, the graph's work for the researcher's FLOPs quota: two per multiply-add of
// a matmul (batched too) and one per element of the largest operand or result of other nodes.
#include <QtTest/QtTest>

#include "goblin/core/graph/graph.hpp"
#include "kinds/graph/graph_cost.hpp"

using goblin::core::DType;
using goblin::labnode::graphFlops;
using namespace goblin::core::graph;
using namespace goblin::core::ops;

class TestGraphCost : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void matmulsCountTwicePerMultiplyAddOthersPerElement();
};

void TestGraphCost::matmulsCountTwicePerMultiplyAddOthersPerElement() {
    // relu(x·w) with x [3, 4, 5] (a batch of 3) and w [5, 6], then summed over dim 2.
    Graph graph;
    graph.inputs = {{0, {DType::F32, {3, 4, 5}}}, {1, {DType::F32, {5, 6}}}};
    graph.nodes = {{2, OpCode::Matmul, {0, 1}, {}},
                   {3, OpCode::Relu, {2}, {}},
                   {4, OpCode::Sum, {3}, {{"dims", IntList{2}}, {"keepdim", false}}}};
    graph.outputs = {4};
    auto plan = validateGraph(graph);
    QVERIFY2(plan.has_value(), plan ? "" : plan.error().message.c_str());
    const double matmul = 2.0 * 3 * 4 * 6 * 5;
    const double relu = 3 * 4 * 6;
    const double sum = 3 * 4 * 6; // its operand is larger than its result
    QCOMPARE(graphFlops(graph, *plan), matmul + relu + sum);
}

QTEST_APPLESS_MAIN(TestGraphCost)
#include "test_graph_cost.moc"
