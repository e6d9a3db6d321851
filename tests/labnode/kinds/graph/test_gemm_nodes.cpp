// Which nodes a Freivalds-verified graph task lets a volunteer compute with any GEMM (the task
// frame's gemm_nodes), through the Coordinator with fake peers: a volunteer of protocol 9 is named
// the heavy conv2d and both its gradients, one of protocol 8 the conv2d alone (it would refuse a
// task naming a gradient); gradients computed through im2col and OpenBLAS pass the node's check
// and the job is delivered.
#include <QtTest/QtTest>

#include <algorithm>
#include <cstring>

#include "goblin/compute/blas_conv.hpp"
#include "labnode/fake_answers.hpp"
#include "support/random_tensors.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

// conv2d (16 → 16 channels, 3×3, K = 144) and its input and weight gradients for a given grad_out,
// every one an output: all three are heavy (docs/verification.md) and witnessed by the researcher.
net::Message submitConvolutions(int id) {
    const auto spec = [](std::int64_t input, std::initializer_list<std::int64_t> shape) {
        return boost::json::object{{"id", input},
                                   {"dtype", "f32"},
                                   {"shape", boost::json::array(shape.begin(), shape.end())}};
    };
    const boost::json::object conv{{"padding", {1, 1}}};
    boost::json::object inputGrad = conv, weightGrad = conv;
    inputGrad["input_shape"] = {2, 16, 6, 6};
    weightGrad["weight_shape"] = {16, 16, 3, 3};
    boost::json::object graph{
        {"catalog", 3},
        {"inputs", {spec(0, {2, 16, 6, 6}), spec(1, {16, 16, 3, 3}), spec(2, {2, 16, 6, 6})}},
        {"constants", boost::json::array{}},
        {"nodes",
         {{{"id", 3}, {"op", "conv2d"}, {"args", {0, 1}}, {"attrs", conv}},
          {{"id", 4}, {"op", "conv2d_input_grad"}, {"args", {2, 1}}, {"attrs", inputGrad}},
          {{"id", 5}, {"op", "conv2d_weight_grad"}, {"args", {0, 2}}, {"attrs", weightGrad}}}},
        {"outputs", {3, 4, 5}}};
    std::vector<net::TensorPtr> tensors;
    std::uint64_t seed = 10 + static_cast<std::uint64_t>(id) * 3;
    for (const core::Shape& shape :
         {core::Shape{2, 16, 6, 6}, core::Shape{16, 16, 3, 3}, core::Shape{2, 16, 6, 6}})
        tensors.push_back(std::make_shared<const core::Tensor>(
            goblin::testing::randomTensor(core::DType::F32, shape, seed++)));
    return net::Message{boost::json::object{{"type", "submit_graph"},
                                            {"id", id},
                                            {"graph", std::move(graph)},
                                            {"verification", "freivalds"},
                                            {"tensors", 3}},
                        std::move(tensors)};
}

std::vector<std::int64_t> gemmNodesOf(const net::Message& frame) {
    std::vector<std::int64_t> ids;
    if (const auto* field = frame.control.if_contains("gemm_nodes"))
        for (const auto& id : field->as_array())
            ids.push_back(id.to_number<std::int64_t>());
    std::sort(ids.begin(), ids.end());
    return ids;
}

// The task's graph with its gemm_nodes through im2col and OpenBLAS, the rest canonical.
net::Message answerThroughBlas(const net::Message& task) {
    const auto g = core::graph::decodeGraph(boost::json::serialize(task.control.at("graph")));
    const auto plan = core::graph::validateGraph(g.value()).value();
    std::vector<core::Tensor> inputs;
    for (const auto& tensor : task.tensors)
        inputs.push_back(*tensor);
    const std::vector<std::int64_t> gemm = gemmNodesOf(task);
    reference::GraphRunHooks hooks;
    hooks.computeNode =
        [&gemm](const core::graph::GraphNode& node,
                std::span<const core::Tensor> args) -> std::optional<Expected<core::Tensor>> {
        if (!std::binary_search(gemm.begin(), gemm.end(), node.id))
            return std::nullopt;
        return compute::blasConvolution(node.op, args[0], args[1], node.attrs);
    };
    return answerWith(task, reference::runGraph(*g, plan, inputs, hooks).value(),
                      "cpu-reference+blas");
}

} // namespace

class TestGemmNodes : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void convolutionGradientsAreNamedToVolunteersThatSpeakProtocol9();
};

void TestGemmNodes::convolutionGradientsAreNamedToVolunteersThatSpeakProtocol9() {
    NodeHarness node;
    FakeCluster cluster(node, CoordinatorSettings{});
    auto researcher = cluster.connectResearcher();
    auto& older =
        cluster.connectVolunteer(1, true, "cpu-eigen", "10.0.0.1", std::int64_t{1} << 30, 8);
    auto& newer =
        cluster.connectVolunteer(1, true, "cpu-eigen", "10.0.0.2", std::int64_t{1} << 30, 9);
    cluster.fromResearcher(submitConvolutions(7));
    cluster.fromResearcher(submitConvolutions(8));
    QVERIFY(node.waitUntil([&] { return researcher->count("job_accepted") == 2; }));
    // One opinion per task (the node checks each): each volunteer holds one of the two jobs.
    QVERIFY(node.waitUntil(
        [&] { return older.link->count("task") == 1 && newer.link->count("task") == 1; }));
    const net::Message olderTask = older.unanswered().at(0);
    const net::Message newerTask = newer.unanswered().at(0);
    QCOMPARE(gemmNodesOf(olderTask), (std::vector<std::int64_t>{3}));
    QCOMPARE(gemmNodesOf(newerTask), (std::vector<std::int64_t>{3, 4, 5}));

    // The newer volunteer's BLAS values (not the canonical bits) pass the node's check.
    const net::Message blas = answerThroughBlas(newerTask);
    const std::vector<core::Tensor> canonical = runTaskGraph(newerTask);
    for (std::size_t output = 1; output < 3; ++output)
        QVERIFY(std::memcmp(blas.tensors.at(output)->bytes().data(),
                            canonical.at(output).bytes().data(),
                            canonical.at(output).byteSize()) != 0);
    cluster.answer(newer, [&blas](const net::Message&) { return blas; });
    cluster.answer(older,
                   [](const net::Message& task) { return answerWith(task, runTaskGraph(task)); });
    QVERIFY(node.waitUntil([&] { return researcher->count("job_done") == 2; }));
    QCOMPARE(newer.verdicts(), (std::vector<std::string>{"accepted"}));
    QCOMPARE(older.verdicts(), (std::vector<std::string>{"accepted"}));
}

QTEST_GUILESS_MAIN(TestGemmNodes)
#include "test_gemm_nodes.moc"
