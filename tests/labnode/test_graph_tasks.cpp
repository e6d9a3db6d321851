// Tests of graph-job planning and judging at the lab node: slicing and merging along a batch dim,
// submissions checked before anything is stored, chunk graphs whose static reshape targets are
// adapted to the chunk, and the referee's decisions over replicas.
#include <QtTest/QtTest>

#include <numeric>

#include <boost/json.hpp>

#include "goblin/core/graph/graph_json.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "graph/graph_chunks.hpp"
#include "graph/replica_referee.hpp"
#include "graph/tensor_slices.hpp"

using goblin::core::DType;
using goblin::core::Tensor;
namespace graph = goblin::core::graph;
namespace ops = goblin::core::ops;
namespace lab = goblin::labnode;

namespace {

Tensor iota(goblin::core::Shape shape) {
    Tensor t = Tensor::allocate(DType::F32, std::move(shape)).value();
    std::iota(t.values<float>().begin(), t.values<float>().end(), 0.0f);
    return t;
}

Tensor copyOf(const Tensor& t) {
    Tensor copy = Tensor::allocate(t.dtype(), t.shape()).value();
    std::copy(t.bytes().begin(), t.bytes().end(), copy.bytes().begin());
    return copy;
}

// x [B, 3, 4] → reshape [B*3, 4] → relu → reshape [B, 12] → outputs (sum over dim 1 as well).
graph::Graph flattenGraph(std::int64_t batch) {
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {batch, 3, 4}}});
    g.nodes.push_back({1, ops::OpCode::Reshape, {0}, {{"shape", ops::IntList{batch * 3, 4}}}});
    g.nodes.push_back({2, ops::OpCode::Relu, {1}, {}});
    g.nodes.push_back({3, ops::OpCode::Reshape, {2}, {{"shape", ops::IntList{batch, 12}}}});
    g.nodes.push_back({4, ops::OpCode::Sum, {3}, {{"dims", ops::IntList{1}}}});
    g.outputs = {3, 4};
    return g;
}

goblin::net::Message submission(const graph::Graph& g, std::vector<Tensor> inputs,
                                const char* batch = nullptr) {
    goblin::net::Message message;
    message.control = boost::json::object{{"type", "submit_graph"},
                                          {"graph", boost::json::parse(graph::encodeGraph(g))}};
    if (batch)
        message.control["batch"] = boost::json::parse(batch);
    for (Tensor& t : inputs)
        message.tensors.push_back(std::make_shared<const Tensor>(std::move(t)));
    return message;
}

} // namespace

class TestGraphTasks : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void sliceAndPlaceRoundTrip();
    void submissionChecksInputsAndBatch();
    void chunksAdaptStaticShapesAndMergeBack();
    void chunksRefuseANonSeparableGraph();
    void refereeDecisions();
};

void TestGraphTasks::sliceAndPlaceRoundTrip() {
    const Tensor whole = iota({4, 5, 3});
    for (int dim = 0; dim < 3; ++dim) {
        Tensor rebuilt = Tensor::allocate(DType::F32, whole.shape()).value();
        const std::int64_t size = whole.shape()[dim];
        for (std::int64_t offset = 0; offset < size; offset += 2) {
            const std::int64_t count = std::min<std::int64_t>(2, size - offset);
            const Tensor part = lab::sliceAlong(whole, dim, offset, count).value();
            QCOMPARE(part.shape()[dim], count);
            QVERIFY(lab::placeAlong(rebuilt, part, dim, offset).has_value());
        }
        QVERIFY(std::equal(whole.bytes().begin(), whole.bytes().end(), rebuilt.bytes().begin()));
    }
    // Element (1, 2, 0) of the slice [:, 2:4, :] is element (1, 4, 0) of the whole.
    const Tensor part = lab::sliceAlong(whole, 1, 2, 2).value();
    QCOMPARE(part.values<float>()[1 * 2 * 3 + 1 * 3 + 0],
             whole.values<float>()[1 * 15 + 3 * 3 + 0]);
    QVERIFY(!lab::sliceAlong(whole, 1, 4, 2).has_value());
    QVERIFY(!lab::sliceAlong(whole, 3, 0, 1).has_value());
    Tensor small = Tensor::allocate(DType::F32, {3, 4, 3}).value();
    QVERIFY(!lab::placeAlong(small, part, 1, 0).has_value()); // other dims differ
}

void TestGraphTasks::submissionChecksInputsAndBatch() {
    const graph::GraphLimits limits;
    const graph::Graph g = flattenGraph(6);
    QVERIFY(lab::parseGraphSubmission(submission(g, {iota({6, 3, 4})}), limits).has_value());
    auto wrongShape = lab::parseGraphSubmission(submission(g, {iota({5, 3, 4})}), limits);
    QVERIFY(!wrongShape && wrongShape.error().code == goblin::ErrorCode::ShapeMismatch);
    auto missing = lab::parseGraphSubmission(submission(g, {}), limits);
    QVERIFY(!missing && missing.error().code == goblin::ErrorCode::InvalidInput);
    auto split = lab::parseGraphSubmission(
        submission(g, {iota({6, 3, 4})}, R"({"inputs":[0],"outputs":[0,-1],"chunks":4})"), limits);
    QVERIFY2(split.has_value(), split ? "" : split.error().message.c_str());
    QCOMPARE(split->batch->size, std::int64_t{6});
    QCOMPARE(split->batch->outputDims, (std::vector<int>{0, 0}));
    QCOMPARE(split->batch->chunks, std::int64_t{4});
    for (const char* bad :
         {R"({"inputs":[3],"outputs":[0,0]})", R"({"inputs":[null],"outputs":[0,0]})",
          R"({"inputs":[0],"outputs":[1,0]})", R"({"inputs":[0]})",
          R"({"inputs":[0],"outputs":[0,0],"chunks":0})"}) {
        auto refused = lab::parseGraphSubmission(submission(g, {iota({6, 3, 4})}, bad), limits);
        QVERIFY2(!refused.has_value(), bad);
    }
}

void TestGraphTasks::chunksAdaptStaticShapesAndMergeBack() {
    const graph::GraphLimits limits;
    const graph::Graph g = flattenGraph(7);
    Tensor x = iota({7, 3, 4});
    for (float& v : x.values<float>())
        v -= 40.0f; // some negatives for relu
    auto parsed = lab::parseGraphSubmission(
        submission(g, {copyOf(x)}, R"({"inputs":[0],"outputs":[0,0],"chunks":3})"), limits);
    QVERIFY(parsed.has_value());
    auto chunks = lab::splitIntoChunks(*parsed, 1, limits);
    QVERIFY2(chunks.has_value(), chunks ? "" : chunks.error().message.c_str());
    QCOMPARE(chunks->size(), std::size_t{3});
    std::vector<std::vector<Tensor>> outputs;
    std::int64_t rows = 0;
    for (const lab::GraphChunk& chunk : *chunks) {
        QCOMPARE(chunk.offset, rows);
        rows += chunk.graph.inputs[0].spec.shape[0];
        std::vector<Tensor> inputs{*chunk.inputs[0]};
        outputs.push_back(goblin::reference::runGraph(chunk.graph, chunk.plan, inputs).value());
        QCOMPARE(chunk.tolerances.size(), std::size_t{2});
        // x, both reshapes, relu and the row sums: every value of the chunk at once.
        const std::int64_t rowsHere = chunk.graph.inputs[0].spec.shape[0];
        QCOMPARE(chunk.peakBytes,
                 static_cast<std::int64_t>(sizeof(float)) * rowsHere * (12 * 4 + 1));
    }
    QCOMPARE(rows, std::int64_t{7});
    const auto merged = lab::mergeChunkOutputs(*parsed, *chunks, outputs).value();
    std::vector<Tensor> whole{x};
    const auto expected = goblin::reference::runGraph(parsed->graph, parsed->plan, whole).value();
    for (std::size_t o = 0; o < 2; ++o) {
        QCOMPARE(merged[o].shape(), expected[o].shape());
        QVERIFY(std::equal(merged[o].bytes().begin(), merged[o].bytes().end(),
                           expected[o].bytes().begin()));
    }
}

void TestGraphTasks::chunksRefuseANonSeparableGraph() {
    // The batch is summed away: output 0 has no batch rows, so the split is refused up front.
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {6, 2}}});
    g.nodes.push_back({1, ops::OpCode::Sum, {0}, {{"dims", ops::IntList{0}}}});
    g.outputs = {1};
    auto parsed = lab::parseGraphSubmission(
        submission(g, {iota({6, 2})}, R"({"inputs":[0],"outputs":[0]})"), graph::GraphLimits{});
    QVERIFY(!parsed.has_value());
    QVERIFY(parsed.error().message.find("batch") != std::string::npos);
}

void TestGraphTasks::refereeDecisions() {
    const graph::Graph g = flattenGraph(2);
    const auto plan = graph::validateGraph(g).value();
    const auto tolerances = goblin::verify::outputTolerances(g, plan);
    std::vector<Tensor> inputs{iota({2, 3, 4})};
    const auto right = goblin::reference::runGraph(g, plan, inputs).value();
    std::vector<Tensor> wrong{copyOf(right[0]), copyOf(right[1])};
    wrong[0].values<float>()[3] += 1.0f;
    auto replica = [](std::string who, const std::vector<Tensor>& outputs) {
        lab::Replica r;
        r.volunteerId = std::move(who);
        r.outputs = outputs;
        return r;
    };
    using lab::Decision;
    auto agree = lab::judgeReplicas(tolerances, {replica("a", right), replica("b", right)});
    QCOMPARE(agree.decision, Decision::Decided);
    QVERIFY(agree.verdicts[0].accepted && agree.verdicts[1].accepted);
    // Any disagreement, even with a majority (a third could be the liar's second identity): the
    // node decides.
    QCOMPARE(lab::judgeReplicas(tolerances, {replica("a", right), replica("b", wrong)}).decision,
             Decision::NeedNodeReference);
    QCOMPARE(lab::judgeReplicas(tolerances,
                                {replica("a", wrong), replica("b", right), replica("c", right)})
                 .decision,
             Decision::NeedNodeReference);
    // The node's replica is trusted: two agreeing liars both lose against it.
    auto node = lab::judgeReplicas(tolerances,
                                   {replica("a", wrong), replica("b", wrong), replica("", right)});
    QCOMPARE(node.decision, Decision::Decided);
    QCOMPARE(node.decisive, std::size_t{2});
    QVERIFY(!node.verdicts[0].accepted && !node.verdicts[1].accepted);
}

QTEST_GUILESS_MAIN(TestGraphTasks)
#include "test_graph_tasks.moc"
