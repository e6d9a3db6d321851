// The volunteer's graph tasks: the graph is validated before anything runs, the inputs must match
// it, and the executor stops between nodes for the gate, so a pause holds within about one node.
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <limits>

#include <boost/json.hpp>

#include "compute_gate.hpp"
#include "goblin/core/graph/graph_json.hpp"
#include "graph_task.hpp"

using namespace goblin::volunteer;
using namespace std::chrono_literals;
namespace graph = goblin::core::graph;
namespace ops = goblin::core::ops;
using goblin::core::DType;
using goblin::core::Tensor;

namespace {

constexpr std::int64_t kSide = 160;

// x · w · w · … (steps matmuls with tanh between them): a long chain of small nodes.
boost::json::value chainGraph(int steps) {
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {kSide, kSide}}});
    g.inputs.push_back({1, {DType::F32, {kSide, kSide}}});
    graph::ValueId last = 0;
    for (int i = 0; i < steps; ++i) {
        const graph::ValueId product = 2 + 2 * i;
        g.nodes.push_back({product, ops::OpCode::Matmul, {last, 1}, {}});
        g.nodes.push_back({product + 1, ops::OpCode::Tanh, {product}, {}});
        last = product + 1;
    }
    g.outputs = {last};
    return boost::json::parse(graph::encodeGraph(g));
}

goblin::net::TensorPtr filled(float scale) {
    Tensor t = Tensor::allocate(DType::F32, {kSide, kSide}).value();
    auto values = t.values<float>();
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = scale * static_cast<float>((i * 7919) % 97) / 97.0f - scale / 2;
    return std::make_shared<const Tensor>(std::move(t));
}

} // namespace

class TestGraphTask : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void refusesBadGraphsBeforeRunning();
    void pauseHoldsBetweenNodes();
    void gemmNodesRunThroughBlas();
    void nonFiniteOperandsRunCanonically();
};

void TestGraphTask::refusesBadGraphsBeforeRunning() {
    GraphExecutors executors(std::nullopt, [](const std::string&) {});
    const std::vector<goblin::net::TensorPtr> inputs{filled(1), filled(0.1f)};
    boost::json::value unknown = chainGraph(1);
    unknown.as_object()["nodes"].as_array()[0].as_object()["op"] = "fft";
    QVERIFY(!executors.run(unknown, inputs, {}).has_value());
    QVERIFY(!executors.run(boost::json::value("graph"), inputs, {}).has_value());
    auto wrongInputs = executors.run(chainGraph(1), {filled(1)}, {});
    QVERIFY(!wrongInputs.has_value());
    auto ok = executors.run(chainGraph(1), inputs, {});
    QVERIFY2(ok.has_value(), ok ? "" : ok.error().message.c_str());
    QCOMPARE(ok->backend, std::string("cpu-reference"));
}

void TestGraphTask::pauseHoldsBetweenNodes() {
    GraphExecutors executors(std::nullopt, [](const std::string&) {});
    const std::vector<goblin::net::TensorPtr> inputs{filled(1), filled(0.1f)};
    const auto expected = executors.run(chainGraph(300), inputs, {}).value();

    ComputeGate gate;
    std::atomic<std::size_t> reached{0};
    // The run waits at node 10 until the pause is set, so the pause comes mid-run however fast
    // the machine is.
    std::promise<void> atTen, pauseSet;
    std::shared_future<void> pauseIsSet = pauseSet.get_future().share();
    goblin::reference::GraphRunHooks hooks;
    hooks.beforeNode = [&](std::size_t step, std::size_t) {
        reached = step;
        if (step == 10) {
            atTen.set_value();
            pauseIsSet.wait();
        }
        return gate.waitWhilePaused() == GateVerdict::Go;
    };
    auto running = std::async(std::launch::async,
                              [&] { return executors.run(chainGraph(300), inputs, {}, hooks); });
    if (atTen.get_future().wait_for(std::chrono::minutes(2)) != std::future_status::ready) {
        pauseSet.set_value(); // unpaused, the run ends and the test fails
        QFAIL("the run never reached node 10");
    }
    gate.setPlan(ComputePlan{false});
    pauseSet.set_value();
    QTRY_VERIFY_WITH_TIMEOUT(gate.parked(), 60000); // a pause holds before the next node…
    const std::size_t atPause = reached.load();
    QCOMPARE(atPause, std::size_t{10});
    gate.wake(); // a re-check while paused keeps it parked
    QVERIFY(gate.parked());
    QCOMPARE(reached.load(), atPause); // …and holds
    gate.setPlan(ComputePlan{});
    const auto result = running.get();
    QVERIFY(result.has_value());
    QCOMPARE(reached.load(), std::size_t{599});
    const auto& a = result->outputs[0];
    QVERIFY(std::equal(a.bytes().begin(), a.bytes().end(), expected.outputs[0].bytes().begin()));

    // A run whose hook says stop ends with an error and no output.
    goblin::reference::GraphRunHooks stop;
    stop.beforeNode = [](std::size_t step, std::size_t) { return step < 5; };
    QVERIFY(!executors.run(chainGraph(300), inputs, {}, stop).has_value());
}

QTEST_GUILESS_MAIN(TestGraphTask)
void TestGraphTask::gemmNodesRunThroughBlas() {
    GraphExecutors executors(std::nullopt, [](const std::string&) {});
    const std::vector<goblin::net::TensorPtr> inputs{filled(1), filled(1)};
    const auto canonical = executors.run(chainGraph(2), inputs, {}).value();
    QCOMPARE(canonical.backend, std::string("cpu-reference"));
    // Nodes 2 and 4 are the matmuls: through OpenBLAS, the tanh nodes canonical.
    const auto blas = executors.run(chainGraph(2), inputs, {}, {}, {2, 4}).value();
    QCOMPARE(blas.backend, std::string("cpu-reference+blas"));
    const auto got = blas.outputs.at(0).values<float>();
    const auto want = canonical.outputs.at(0).values<float>();
    QCOMPARE(got.size(), want.size());
    float worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, std::abs(got[i] - want[i]));
    QVERIFY2(worst < 1e-3f, std::to_string(worst).c_str()); // rounding apart, not the same bits
    // A conv2d node through im2col and OpenBLAS: rounding apart from the canonical kernel.
    graph::Graph conv;
    conv.inputs.push_back({0, {DType::F32, {2, 8, 10, 10}}});
    conv.inputs.push_back({1, {DType::F32, {16, 4, 3, 3}}});
    const ops::Attributes convAttrs{{"padding", ops::IntList{1, 1}},
                                    {"stride", ops::IntList{2, 1}},
                                    {"groups", std::int64_t{2}}};
    ops::Attributes inputGrad = convAttrs, weightGrad = convAttrs;
    inputGrad["input_shape"] = ops::IntList{2, 8, 10, 10};
    weightGrad["weight_shape"] = ops::IntList{16, 4, 3, 3};
    conv.nodes.push_back({2, ops::OpCode::Conv2d, {0, 1}, convAttrs});
    // Its gradients with the output as grad_out (protocol 9: gemm nodes too).
    conv.nodes.push_back({3, ops::OpCode::Conv2dInputGrad, {2, 1}, inputGrad});
    conv.nodes.push_back({4, ops::OpCode::Conv2dWeightGrad, {0, 2}, weightGrad});
    conv.outputs = {2, 3, 4};
    const boost::json::value convJson = boost::json::parse(graph::encodeGraph(conv));
    std::vector<goblin::net::TensorPtr> convInputs;
    for (const goblin::core::Shape& shape :
         {goblin::core::Shape{2, 8, 10, 10}, goblin::core::Shape{16, 4, 3, 3}}) {
        Tensor t = Tensor::allocate(DType::F32, shape).value();
        auto values = t.values<float>();
        for (std::size_t i = 0; i < values.size(); ++i)
            values[i] = static_cast<float>((i * 7919) % 101) / 101.0f - 0.5f;
        convInputs.push_back(std::make_shared<const Tensor>(std::move(t)));
    }
    const auto exactConv = executors.run(convJson, convInputs, {}).value();
    const auto blasConv = executors.run(convJson, convInputs, {}, {}, {2, 3, 4}).value();
    QCOMPARE(blasConv.backend, std::string("cpu-reference+blas"));
    for (std::size_t output = 0; output < 3; ++output) {
        const auto convGot = blasConv.outputs.at(output).values<float>();
        const auto convWant = exactConv.outputs.at(output).values<float>();
        QCOMPARE(convGot.size(), convWant.size());
        bool sameBits = true;
        for (std::size_t i = 0; i < convGot.size(); ++i) {
            QVERIFY2(std::abs(convGot[i] - convWant[i]) < 1e-3f * (1 + std::abs(convWant[i])),
                     (std::to_string(output) + ": " + std::to_string(i)).c_str());
            sameBits = sameBits && convGot[i] == convWant[i];
        }
        QVERIFY2(!sameBits, std::to_string(output).c_str()); // through OpenBLAS, not canonical
    }
    // Ids that are not matmul or convolution nodes of the graph refuse the task before anything
    // runs.
    for (const std::vector<std::int64_t>& wrong :
         {std::vector<std::int64_t>{3}, std::vector<std::int64_t>{99}}) {
        auto refused = executors.run(chainGraph(2), inputs, {}, {}, wrong);
        QVERIFY(!refused);
        QCOMPARE(refused.error().code, goblin::ErrorCode::InvalidMessage);
    }
}

// A NaN or an infinity in a gemm node's operand: that node runs on the canonical kernel (whose bits
// the node recomputes), so the whole task has the canonical bits, where finite operands through
// OpenBLAS differ from them in the last bits (above).
void TestGraphTask::nonFiniteOperandsRunCanonically() {
    GraphExecutors executors(std::nullopt, [](const std::string&) {});
    for (const float bad :
         {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
          -std::numeric_limits<float>::infinity()}) {
        Tensor x = Tensor::allocate(DType::F32, {kSide, kSide}).value();
        const auto source = filled(1);
        std::copy(source->values<float>().begin(), source->values<float>().end(),
                  x.values<float>().begin());
        x.values<float>()[kSide * kSide - 3] = bad; // last row: the other rows stay finite
        const std::vector<goblin::net::TensorPtr> inputs{
            std::make_shared<const Tensor>(std::move(x)), filled(1)};
        const auto canonical = executors.run(chainGraph(1), inputs, {}).value();
        const auto gemm = executors.run(chainGraph(1), inputs, {}, {}, {2}).value();
        const auto want = canonical.outputs.at(0).bytes();
        const auto got = gemm.outputs.at(0).bytes();
        QCOMPARE(got.size(), want.size());
        QVERIFY2(std::memcmp(got.data(), want.data(), got.size()) == 0,
                 std::to_string(bad).c_str());
    }
}

#include "test_graph_task.moc"
