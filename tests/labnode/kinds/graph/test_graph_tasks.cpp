// Tests of graph-job planning and judging at the lab node: slicing and merging along a batch dim,
// submissions checked before anything is stored, chunk graphs whose static reshape targets are
// adapted to the chunk, and the referee's decisions over replicas.
#include <QtTest/QtTest>

#include <array>

#include <numeric>

#include <boost/json.hpp>

#include "goblin/core/graph/graph_json.hpp"
#include "goblin/plan/tensor_slices.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "goblin/verify/replica_referee.hpp"
#include "kinds/graph/graph_chunks.hpp"

using goblin::core::DType;
using goblin::core::Tensor;
namespace graph = goblin::core::graph;
namespace ops = goblin::core::ops;
namespace lab = goblin::labnode;
namespace plan = goblin::plan;
namespace verify = goblin::verify;

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
    void chunksFollowTheRowsWhenOtherDimsEqualTheBatch();
    void microBatchesRunTheGraphUnchangedAndAverage();
    void microBatchSubmissionsAreCheckedUpFront();
    void refereeDecisions();
};

void TestGraphTasks::sliceAndPlaceRoundTrip() {
    const Tensor whole = iota({4, 5, 3});
    for (int dim = 0; dim < 3; ++dim) {
        Tensor rebuilt = Tensor::allocate(DType::F32, whole.shape()).value();
        const std::int64_t size = whole.shape()[dim];
        for (std::int64_t offset = 0; offset < size; offset += 2) {
            const std::int64_t count = std::min<std::int64_t>(2, size - offset);
            const Tensor part = plan::sliceAlong(whole, dim, offset, count).value();
            QCOMPARE(part.shape()[dim], count);
            QVERIFY(plan::placeAlong(rebuilt, part, dim, offset).has_value());
        }
        QVERIFY(std::equal(whole.bytes().begin(), whole.bytes().end(), rebuilt.bytes().begin()));
    }
    // Element (1, 2, 0) of the slice [:, 2:4, :] is element (1, 4, 0) of the whole.
    const Tensor part = plan::sliceAlong(whole, 1, 2, 2).value();
    QCOMPARE(part.values<float>()[1 * 2 * 3 + 1 * 3 + 0],
             whole.values<float>()[1 * 15 + 3 * 3 + 0]);
    QVERIFY(!plan::sliceAlong(whole, 1, 4, 2).has_value());
    QVERIFY(!plan::sliceAlong(whole, 3, 0, 1).has_value());
    Tensor small = Tensor::allocate(DType::F32, {3, 4, 3}).value();
    QVERIFY(!plan::placeAlong(small, part, 1, 0).has_value()); // other dims differ
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
    QCOMPARE(split->batch->outputs,
             (std::vector<lab::OutputMerge>{{lab::OutputMerge::Kind::Concat, 0},
                                            {lab::OutputMerge::Kind::Concat, 0}}));
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
        // What the chunk holds at once: x, relu's value and the row sums (the reshapes share
        // storage with what they reshape).
        const std::int64_t rowsHere = chunk.graph.inputs[0].spec.shape[0];
        QCOMPARE(chunk.peakBytes,
                 static_cast<std::int64_t>(sizeof(float)) * rowsHere * (12 * 2 + 1));
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

// x [B, H, L, E] → reshape [B·H, L, E] → relu → reshape [B, H, L, E] (a batched matmul's
// decomposition): with E = B, the target dim equal to the batch is the wrong one.
graph::Graph headsGraph(std::int64_t b, std::int64_t h, std::int64_t l, std::int64_t e) {
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {b, h, l, e}}});
    g.nodes.push_back({1, ops::OpCode::Reshape, {0}, {{"shape", ops::IntList{b * h, l, e}}}});
    g.nodes.push_back({2, ops::OpCode::Relu, {1}, {}});
    g.nodes.push_back({3, ops::OpCode::Reshape, {2}, {{"shape", ops::IntList{b, h, l, e}}}});
    g.nodes.push_back({4, ops::OpCode::Sum, {3}, {{"dims", ops::IntList{1, 2}}}});
    g.outputs = {4};
    return g;
}

void TestGraphTasks::chunksFollowTheRowsWhenOtherDimsEqualTheBatch() {
    const graph::GraphLimits limits;
    // B = E = 4, L = 8 (a multiple of B): each chunk's outputs must be the whole graph's rows.
    for (const auto& [b, h, l, e] :
         {std::array<std::int64_t, 4>{4, 2, 8, 4}, std::array<std::int64_t, 4>{4, 4, 8, 2},
          std::array<std::int64_t, 4>{2, 3, 4, 2}}) {
        const graph::Graph g = headsGraph(b, h, l, e);
        Tensor x = iota({b, h, l, e});
        for (float& v : x.values<float>())
            v -= 20.0f;
        auto parsed = lab::parseGraphSubmission(
            submission(g, {copyOf(x)}, R"({"inputs":[0],"outputs":[0],"chunks":2})"), limits);
        QVERIFY(parsed.has_value());
        auto chunks = lab::splitIntoChunks(*parsed, 1, limits);
        QVERIFY2(chunks.has_value(), chunks ? "" : chunks.error().message.c_str());
        std::vector<std::vector<Tensor>> outputs;
        for (const lab::GraphChunk& chunk : *chunks) {
            std::vector<Tensor> inputs{*chunk.inputs[0]};
            outputs.push_back(goblin::reference::runGraph(chunk.graph, chunk.plan, inputs).value());
        }
        const auto merged = lab::mergeChunkOutputs(*parsed, *chunks, outputs).value();
        std::vector<Tensor> whole{x};
        const auto expected =
            goblin::reference::runGraph(parsed->graph, parsed->plan, whole).value();
        QCOMPARE(merged[0].shape(), expected[0].shape());
        QVERIFY2(std::equal(merged[0].bytes().begin(), merged[0].bytes().end(),
                            expected[0].bytes().begin()),
                 (std::to_string(b) + " " + std::to_string(h)).c_str());
    }
    // A constant broadcast to [B, H] with B = H: which dim is the batch cannot be known from the
    // shapes; the split is refused, not guessed.
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {4, 4}}});
    g.constants.push_back({1, Tensor::allocate(DType::F32, {1, 1}).value()});
    g.nodes.push_back({2, ops::OpCode::Expand, {1}, {{"shape", ops::IntList{4, 4}}}});
    g.nodes.push_back({3, ops::OpCode::Add, {0, 2}, {}});
    g.outputs = {3};
    auto parsed = lab::parseGraphSubmission(
        submission(g, {iota({4, 4})}, R"({"inputs":[0],"outputs":[0],"chunks":2})"), limits);
    QVERIFY(parsed.has_value());
    auto refused = lab::splitIntoChunks(*parsed, 1, limits);
    QVERIFY(!refused.has_value());
    QVERIFY2(refused.error().message.find("of the batch") != std::string::npos,
             refused.error().message.c_str());
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

// x [2, 3] (one micro-batch of 2 rows), w [3] → relu(x·w) per row [2, 3] and its mean over
// the rows [3]: the shape of a training step's per-sample values and of its mean loss.
graph::Graph microStep() {
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {2, 3}}});
    g.inputs.push_back({1, {DType::F32, {3}}});
    g.nodes.push_back({2, ops::OpCode::Mul, {0, 1}, {}});
    g.nodes.push_back({3, ops::OpCode::Relu, {2}, {}});
    g.nodes.push_back({4, ops::OpCode::Mean, {3}, {{"dims", ops::IntList{0}}}});
    g.outputs = {3, 4};
    return g;
}

void TestGraphTasks::microBatchesRunTheGraphUnchangedAndAverage() {
    const graph::GraphLimits limits;
    const graph::Graph g = microStep();
    Tensor x = iota({6, 3}), w = iota({3});
    for (float& v : x.values<float>())
        v = (v - 7.0f) / 3.0f;
    auto parsed = lab::parseGraphSubmission(
        submission(g, {copyOf(x), copyOf(w)},
                   R"({"inputs":[0,null],"outputs":[0,"mean"],"micro_batch":2})"),
        limits);
    QVERIFY2(parsed.has_value(), parsed ? "" : parsed.error().message.c_str());
    QCOMPARE(parsed->batch->size, std::int64_t{6});
    QCOMPARE(parsed->batch->chunks, std::int64_t{3});
    auto chunks = lab::splitIntoChunks(*parsed, 7, limits).value(); // the request decides: 3
    QCOMPARE(chunks.size(), std::size_t{3});
    std::vector<std::vector<Tensor>> outputs;
    for (const lab::GraphChunk& chunk : chunks) {
        QCOMPARE(chunk.graph.inputs[0].spec.shape, (goblin::core::Shape{2, 3}));
        std::vector<Tensor> inputs{*chunk.inputs[0], *chunk.inputs[1]};
        outputs.push_back(goblin::reference::runGraph(chunk.graph, chunk.plan, inputs).value());
    }
    const auto merged = lab::mergeChunkOutputs(*parsed, chunks, outputs).value();
    QCOMPARE(merged[0].shape(), (goblin::core::Shape{6, 3}));
    QCOMPARE(merged[1].shape(), (goblin::core::Shape{3}));
    for (std::int64_t col = 0; col < 3; ++col) {
        double mean = 0; // float64 recomputation over all six rows
        for (std::int64_t row = 0; row < 6; ++row) {
            const double y = std::max(0.0, static_cast<double>(x.values<float>()[row * 3 + col]) *
                                               w.values<float>()[col]);
            QCOMPARE(static_cast<double>(merged[0].values<float>()[row * 3 + col]), y);
            mean += y / 6.0;
        }
        QVERIFY(std::abs(merged[1].values<float>()[col] - mean) <= 1e-6 * (1.0 + std::abs(mean)));
    }
    // A sum adds the micro-batches' values: three times the mean here.
    auto summed = lab::parseGraphSubmission(
        submission(g, {copyOf(x), copyOf(w)},
                   R"({"inputs":[0,null],"outputs":[0,"sum"],"micro_batch":2})"),
        limits);
    const auto total = lab::mergeChunkOutputs(*summed, chunks, outputs).value();
    for (std::size_t col = 0; col < 3; ++col)
        QVERIFY(std::abs(total[1].values<float>()[col] - 3 * merged[1].values<float>()[col]) <=
                1e-5f * (1 + std::abs(total[1].values<float>()[col])));
}

void TestGraphTasks::microBatchSubmissionsAreCheckedUpFront() {
    const graph::GraphLimits limits;
    const graph::Graph g = microStep();
    struct Case {
        std::int64_t rows;
        const char* batch;
        goblin::ErrorCode code;
    };
    for (const Case& bad : {
             Case{5, R"({"inputs":[0,null],"outputs":[0,"mean"],"micro_batch":2})",
                  goblin::ErrorCode::ShapeMismatch}, // 5 rows are not micro-batches of 2
             Case{6, R"({"inputs":[0,null],"outputs":[0,"mean"],"micro_batch":3})",
                  goblin::ErrorCode::ShapeMismatch}, // the graph is written for 2 rows
             Case{6, R"({"inputs":[0,null],"outputs":[0,"mean"],"micro_batch":2,"chunks":2})",
                  goblin::ErrorCode::InvalidInput}, // every chunk is one micro-batch
             Case{6, R"({"inputs":[0,null],"outputs":[0,"median"],"micro_batch":2})",
                  goblin::ErrorCode::InvalidInput},
             Case{6, R"({"inputs":[0,null],"outputs":[0,"mean"],"micro_batch":0})",
                  goblin::ErrorCode::InvalidInput},
             Case{6, R"({"inputs":[0,null],"outputs":["mean","mean"]})",
                  goblin::ErrorCode::ShapeMismatch}, // without a micro-batch x declares 2 rows
         }) {
        auto refused = lab::parseGraphSubmission(
            submission(g, {iota({bad.rows, 3}), iota({3})}, bad.batch), limits);
        QVERIFY2(!refused.has_value(), bad.batch);
        QVERIFY2(refused.error().code == bad.code, refused.error().message.c_str());
    }
    // An integer output cannot be averaged.
    graph::Graph counts;
    counts.inputs.push_back({0, {DType::I64, {2, 3}}});
    counts.nodes.push_back({1, ops::OpCode::Sum, {0}, {{"dims", ops::IntList{0}}}});
    counts.outputs = {1};
    Tensor ints = Tensor::allocate(DType::I64, {4, 3}).value();
    auto refused =
        lab::parseGraphSubmission(submission(counts, {std::move(ints)},
                                             R"({"inputs":[0],"outputs":["sum"],"micro_batch":2})"),
                                  limits);
    QVERIFY(!refused && refused.error().code == goblin::ErrorCode::UnsupportedDtype);
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
        verify::Replica r;
        r.volunteerId = std::move(who);
        r.outputs = outputs;
        return r;
    };
    using verify::Decision;
    auto agree = verify::judgeReplicas(tolerances, {replica("a", right), replica("b", right)});
    QCOMPARE(agree.decision, Decision::Decided);
    QVERIFY(agree.verdicts[0].accepted && agree.verdicts[1].accepted);
    // Any disagreement, even with a majority (a third could be the liar's second identity): the
    // node decides.
    QCOMPARE(verify::judgeReplicas(tolerances, {replica("a", right), replica("b", wrong)}).decision,
             Decision::NeedNodeReference);
    QCOMPARE(verify::judgeReplicas(tolerances,
                                   {replica("a", wrong), replica("b", right), replica("c", right)})
                 .decision,
             Decision::NeedNodeReference);
    // The node's replica is trusted: two agreeing liars both lose against it.
    auto node = verify::judgeReplicas(
        tolerances, {replica("a", wrong), replica("b", wrong), replica("", right)});
    QCOMPARE(node.decision, Decision::Decided);
    QCOMPARE(node.decisive, std::size_t{2});
    QVERIFY(!node.verdicts[0].accepted && !node.verdicts[1].accepted);
}

QTEST_GUILESS_MAIN(TestGraphTasks)
#include "test_graph_tasks.moc"
