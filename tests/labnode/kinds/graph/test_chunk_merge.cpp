// Tests of kinds/graph/chunk_merge (mergeChunkOutputs, graph_chunks.hpp): concatenated outputs are
// the whole graph's bits (the reference executor run once) at every chunk count, uneven ones
// included; summed and averaged outputs are accumulated in float64 in chunk order, each range
// weighted by its rows ÷ B for a mean, and rounded once; a stage's handed-on values and every
// chunk's witnesses are never merged; an output computed in parts is joined along its dim; missing
// or misshapen chunk outputs are refused with an error and no result.
#include <QtTest/QtTest>

#include <cmath>

#include "goblin/plan/tensor_slices.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "kinds/graph/graph_chunks.hpp"
#include "labnode/kinds/graph/graph_submissions.hpp"
#include "support/random_tensors.hpp"
#include "support/tensor_bits.hpp"

using goblin::ErrorCode;
using goblin::core::DType;
using goblin::core::Shape;
using goblin::core::Tensor;
namespace graph = goblin::core::graph;
namespace ops = goblin::core::ops;
namespace lab = goblin::labnode;
using goblin::labnode::testing::splitOf;
using goblin::labnode::testing::submissionOf;
using goblin::testing::randomTensor;
using goblin::testing::sameBits;
using Kind = lab::OutputMerge::Kind;

namespace {

// x [B, 5] split along 0, w [5, 4] whole: t = tanh(x·w) [B, 4] and tᵀ [4, B] (batch along dim 1).
lab::GraphSubmission rowsSubmission(std::int64_t b) {
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {b, 5}}});
    g.inputs.push_back({1, {DType::F32, {5, 4}}});
    g.nodes.push_back({2, ops::OpCode::Matmul, {0, 1}, {}});
    g.nodes.push_back({3, ops::OpCode::Tanh, {2}, {}});
    g.nodes.push_back({4, ops::OpCode::Permute, {3}, {{"dims", ops::IntList{1, 0}}}});
    g.outputs = {3, 4};
    return submissionOf(std::move(g),
                        {randomTensor(DType::F32, {b, 5}, 1), randomTensor(DType::F32, {5, 4}, 2)},
                        splitOf({0, std::nullopt}, {{Kind::Concat, 0}, {Kind::Concat, 1}}, b));
}

// x [B, 3] split along 0: y = tanh(x) [B, 3] concatenated, and Σ or mean of y over the rows [3].
lab::GraphSubmission reducedSubmission(std::int64_t b, Kind kind) {
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {b, 3}}});
    g.nodes.push_back({1, ops::OpCode::Tanh, {0}, {}});
    g.nodes.push_back({2,
                       kind == Kind::Sum ? ops::OpCode::Sum : ops::OpCode::Mean,
                       {1},
                       {{"dims", ops::IntList{0}}}});
    g.outputs = {1, 2};
    return submissionOf(std::move(g), {randomTensor(DType::F32, {b, 3}, 3)},
                        splitOf({0}, {{Kind::Concat, 0}, {kind, 0}}, b));
}

std::vector<Tensor> runChunk(const lab::GraphChunk& chunk) {
    std::vector<Tensor> inputs;
    for (const goblin::net::TensorPtr& input : chunk.inputs)
        inputs.push_back(*input);
    return goblin::reference::runGraph(chunk.graph, chunk.plan, inputs).value();
}

struct Computed {
    std::vector<lab::GraphChunk> chunks;
    std::vector<std::vector<Tensor>> outputs; // per chunk, witnesses included
};

// The chunks for `count` tasks, each computed by the reference executor, boundary inputs filled
// from the stages computed before.
Computed computeChunks(const lab::GraphSubmission& s, std::int64_t count,
                       const lab::StageBudget& budget = {}) {
    Computed computed{lab::splitIntoChunks(s, count, graph::GraphLimits{}, budget).value(), {}};
    for (lab::GraphChunk chunk : computed.chunks) {
        const bool filled = lab::fillBoundaryInputs(chunk, [&](std::size_t c) {
                                return c < computed.outputs.size() ? &computed.outputs[c] : nullptr;
                            }).has_value();
        if (!filled)
            qFatal("a stage's boundary inputs could not be filled");
        computed.outputs.push_back(runChunk(chunk));
    }
    return computed;
}

std::vector<Tensor> wholeRun(const lab::GraphSubmission& s) {
    return goblin::reference::runGraph(s.graph, s.plan, lab::valuesOf(s.inputs)).value();
}

std::int64_t rowsOf(const lab::GraphChunk& chunk) {
    return chunk.graph.inputs[0].spec.shape[0];
}

// A [n] f32 tensor of `values`.
Tensor vectorOf(const std::vector<float>& values) {
    Tensor t = Tensor::allocate(DType::F32, {static_cast<std::int64_t>(values.size())}).value();
    std::copy(values.begin(), values.end(), t.values<float>().begin());
    return t;
}

// y = (x·W1)·W2, x [8, 64] split in two ranges, each over a 24 KiB stage budget: two stages each.
lab::GraphSubmission chainSubmission() {
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {8, 64}}});
    g.inputs.push_back({1, {DType::F32, {64, 64}}});
    g.inputs.push_back({2, {DType::F32, {64, 64}}});
    g.nodes.push_back({3, ops::OpCode::Matmul, {0, 1}, {}});
    g.nodes.push_back({4, ops::OpCode::Matmul, {3, 2}, {}});
    g.outputs = {4};
    return submissionOf(std::move(g),
                        {randomTensor(DType::F32, {8, 64}, 11),
                         randomTensor(DType::F32, {64, 64}, 12),
                         randomTensor(DType::F32, {64, 64}, 13)},
                        splitOf({0, std::nullopt, std::nullopt}, {{Kind::Concat, 0}}, 8));
}

} // namespace

class TestChunkMerge : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void concatenatedOutputsAreTheWholeGraphsBitsAtEveryChunkCount();
    void summedOutputsAddInFloat64InChunkOrderRoundedOnce();
    void averagedOutputsWeighEachRangeByItsRows();
    void handedOnValuesAndWitnessesAreNeverMerged();
    void anOutputComputedInPartsIsJoinedAlongItsDim();
    void missingOutputsAreRefusedWithNoResult();
    void misshapenOutputsAreRefusedWithNoResult();
};

void TestChunkMerge::concatenatedOutputsAreTheWholeGraphsBitsAtEveryChunkCount() {
    constexpr std::int64_t kRows = 7;
    const lab::GraphSubmission s = rowsSubmission(kRows);
    const std::vector<Tensor> expected = wholeRun(s);
    for (std::int64_t count = 1; count <= kRows; ++count) {
        const Computed computed = computeChunks(s, count);
        QCOMPARE(static_cast<std::int64_t>(computed.chunks.size()), count);
        const auto merged = lab::mergeChunkOutputs(s, computed.chunks, computed.outputs);
        QVERIFY2(merged, merged ? "" : merged.error().message.c_str());
        QCOMPARE(merged->size(), s.graph.outputs.size());
        QCOMPARE(merged->at(0).shape(), (Shape{kRows, 4}));
        QCOMPARE(merged->at(1).shape(), (Shape{4, kRows}));
        QVERIFY2(sameBits(*merged, expected), std::to_string(count).c_str());
    }
}

void TestChunkMerge::summedOutputsAddInFloat64InChunkOrderRoundedOnce() {
    const lab::GraphSubmission s = reducedSubmission(3, Kind::Sum);
    const Computed computed = computeChunks(s, 3);
    QCOMPARE(computed.chunks.size(), std::size_t{3});
    // Chosen parts: element 0 loses its 1 in float32 (1e8 + 1 rounds back to 1e8) but not in
    // float64; element 1 loses it in float64 too in chunk order (1e17 + 1), not in another order.
    const float big = 1e8f, huger = 1e17f;
    std::vector<std::vector<Tensor>> outputs;
    const std::vector<std::vector<float>> parts{
        {big, huger, 0.3f, -2.5f}, {1.0f, 1.0f, 0.7f, 1e-3f}, {-big, -huger, 1.1f, 7.25f}};
    for (std::size_t c = 0; c < 3; ++c)
        outputs.push_back({computed.outputs[c][0], vectorOf(parts[c])});
    const auto merged = lab::mergeChunkOutputs(s, computed.chunks, outputs);
    QVERIFY2(merged, merged ? "" : merged.error().message.c_str());
    QCOMPARE(merged->at(1).dtype(), DType::F32);
    for (std::size_t i = 0; i < 4; ++i) {
        double sum = 0.0;
        for (std::size_t c = 0; c < 3; ++c)
            sum += static_cast<double>(parts[c][i]);
        QCOMPARE(merged->at(1).values<float>()[i], static_cast<float>(sum)); // rounded once
    }
    const float inFloat32 = (parts[0][0] + parts[1][0]) + parts[2][0];
    QVERIFY(merged->at(1).values<float>()[0] != inFloat32);
    const double otherOrder = (static_cast<double>(parts[0][1]) + parts[2][1]) + parts[1][1];
    QVERIFY(static_cast<double>(merged->at(1).values<float>()[1]) != otherOrder);

    // The chunks' own sums merge to the float64 sum of their outputs, close to the whole batch's.
    const auto real = lab::mergeChunkOutputs(s, computed.chunks, computed.outputs);
    QVERIFY2(real, real ? "" : real.error().message.c_str());
    const Tensor y = wholeRun(s).at(0);
    QVERIFY(sameBits(real->at(0), y));
    for (std::size_t i = 0; i < 3; ++i) {
        double fromChunks = 0.0, fromRows = 0.0;
        for (std::size_t c = 0; c < 3; ++c)
            fromChunks += static_cast<double>(computed.outputs[c][1].values<float>()[i]);
        for (std::size_t r = 0; r < 3; ++r)
            fromRows += static_cast<double>(y.values<float>()[r * 3 + i]);
        QCOMPARE(real->at(1).values<float>()[i], static_cast<float>(fromChunks));
        QVERIFY(std::abs(real->at(1).values<float>()[i] - fromRows) <=
                1e-6 * (1.0 + std::abs(fromRows)));
    }
}

void TestChunkMerge::averagedOutputsWeighEachRangeByItsRows() {
    constexpr std::int64_t kRows = 7; // three ranges of unequal rows
    const lab::GraphSubmission s = reducedSubmission(kRows, Kind::Mean);
    const Computed computed = computeChunks(s, 3);
    QCOMPARE(computed.chunks.size(), std::size_t{3});
    QVERIFY(rowsOf(computed.chunks.front()) != rowsOf(computed.chunks.back()));
    const auto merged = lab::mergeChunkOutputs(s, computed.chunks, computed.outputs);
    QVERIFY2(merged, merged ? "" : merged.error().message.c_str());
    const Tensor y = wholeRun(s).at(0);
    QVERIFY(sameBits(merged->at(0), y));
    QCOMPARE(merged->at(1).shape(), (Shape{3}));
    bool unweightedDiffers = false;
    for (std::size_t i = 0; i < 3; ++i) {
        double weighted = 0.0, unweighted = 0.0;
        for (std::size_t c = 0; c < 3; ++c) {
            const double mean = static_cast<double>(computed.outputs[c][1].values<float>()[i]);
            weighted +=
                static_cast<double>(rowsOf(computed.chunks[c])) / static_cast<double>(kRows) * mean;
            unweighted += mean / 3.0;
        }
        const float got = merged->at(1).values<float>()[i];
        QCOMPARE(got, static_cast<float>(weighted));
        unweightedDiffers = unweightedDiffers || got != static_cast<float>(unweighted);
        double fromRows = 0.0; // the mean over all rows, in float64
        for (std::int64_t r = 0; r < kRows; ++r)
            fromRows += static_cast<double>(y.values<float>()[static_cast<std::size_t>(r) * 3 + i]);
        fromRows /= static_cast<double>(kRows);
        QVERIFY(std::abs(got - fromRows) <= 1e-6 * (1.0 + std::abs(fromRows)));
    }
    QVERIFY(unweightedDiffers); // the weights matter for these ranges
}

void TestChunkMerge::handedOnValuesAndWitnessesAreNeverMerged() {
    const lab::GraphSubmission s = chainSubmission();
    Computed computed = computeChunks(s, 2, lab::StageBudget{24 * 1024});
    QVERIFY(computed.chunks.size() > 2); // the ranges were cut into stages
    const std::vector<Tensor> expected = wholeRun(s);
    auto merged = lab::mergeChunkOutputs(s, computed.chunks, computed.outputs);
    QVERIFY2(merged, merged ? "" : merged.error().message.c_str());
    QVERIFY(sameBits(*merged, expected));

    // Every output that is not the researcher's (a value handed on, a witness) made garbage,
    // then dropped where it may be (a lease told to omit witnesses): the same bits.
    std::size_t notMerged = 0;
    for (std::size_t c = 0; c < computed.chunks.size(); ++c) {
        const lab::GraphChunk& chunk = computed.chunks[c];
        std::vector<Tensor>& outputs = computed.outputs[c];
        QCOMPARE(outputs.size(), chunk.graph.outputs.size());
        for (std::size_t k = 0; k < outputs.size(); ++k) {
            if (k < chunk.mergedAs.size() && chunk.mergedAs[k] != lab::kNotMerged)
                continue;
            outputs[k] = randomTensor(outputs[k].dtype(), outputs[k].shape(), 100 + k);
            ++notMerged;
        }
    }
    QVERIFY(notMerged > 0);
    merged = lab::mergeChunkOutputs(s, computed.chunks, computed.outputs);
    QVERIFY2(merged, merged ? "" : merged.error().message.c_str());
    QVERIFY(sameBits(*merged, expected));
    for (std::size_t c = 0; c < computed.chunks.size(); ++c)
        computed.outputs[c].resize(computed.chunks[c].researcherOutputs());
    merged = lab::mergeChunkOutputs(s, computed.chunks, computed.outputs);
    QVERIFY2(merged, merged ? "" : merged.error().message.c_str());
    QVERIFY(sameBits(*merged, expected));
}

void TestChunkMerge::anOutputComputedInPartsIsJoinedAlongItsDim() {
    // An unsplit graph whose [2, 6] output two stages compute in column blocks of 4 and 2 (the
    // concat the cut lifted out): each stage keeps one part.
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {2, 6}}});
    g.nodes.push_back({1, ops::OpCode::Relu, {0}, {}});
    g.outputs = {1};
    const lab::GraphSubmission s =
        submissionOf(g, {randomTensor(DType::F32, {2, 6}, 5)}, std::nullopt);
    std::vector<lab::GraphChunk> chunks(2);
    for (std::size_t c = 0; c < 2; ++c) {
        chunks[c].stage = c;
        chunks[c].mergedAs = {0};
        chunks[c].outputParts = {goblin::plan::OutputParts{2, 1}};
    }
    const Tensor left = randomTensor(DType::F32, {2, 4}, 6);
    const Tensor right = randomTensor(DType::F32, {2, 2}, 7);
    // The parts are placed by their part number, whichever chunk computes them.
    chunks[0].mergedPart = {1};
    chunks[1].mergedPart = {0};
    const auto joined = lab::mergeChunkOutputs(s, chunks, {{right}, {left}});
    QVERIFY2(joined, joined ? "" : joined.error().message.c_str());
    QCOMPARE(joined->size(), std::size_t{1});
    const Tensor& whole = joined->front();
    QCOMPARE(whole.shape(), (Shape{2, 6}));
    for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 6; ++j)
            QCOMPARE(whole.values<float>()[i * 6 + j], j < 4
                                                           ? left.values<float>()[i * 4 + j]
                                                           : right.values<float>()[i * 2 + j - 4]);

    // A part no chunk computes, or parts that disagree off the joined dim: no result.
    std::vector<lab::GraphChunk> lacking = chunks;
    lacking[0].mergedAs = {lab::kNotMerged};
    auto refused = lab::mergeChunkOutputs(s, lacking, {{right}, {left}});
    QVERIFY(!refused);
    QVERIFY2(refused.error().message.find("output") != std::string::npos,
             refused.error().message.c_str());
    refused = lab::mergeChunkOutputs(s, chunks, {{randomTensor(DType::F32, {3, 2}, 8)}, {left}});
    QVERIFY(!refused);
    QCOMPARE(refused.error().code, ErrorCode::ShapeMismatch);
}

void TestChunkMerge::missingOutputsAreRefusedWithNoResult() {
    const lab::GraphSubmission s = rowsSubmission(7);
    const Computed computed = computeChunks(s, 3);
    QVERIFY(lab::mergeChunkOutputs(s, computed.chunks, computed.outputs).has_value());
    std::vector<std::vector<std::vector<Tensor>>> cases;
    cases.emplace_back(computed.outputs.begin(), computed.outputs.end() - 1); // a chunk's lacking
    cases.push_back(computed.outputs);
    cases.back().push_back(computed.outputs.back()); // one chunk too many
    cases.push_back(computed.outputs);
    cases.back()[1].clear(); // a chunk brought nothing
    cases.push_back(computed.outputs);
    cases.back()[2].resize(1); // a chunk brought the first of its two outputs
    for (std::size_t k = 0; k < cases.size(); ++k) {
        const auto refused = lab::mergeChunkOutputs(s, computed.chunks, cases[k]);
        QVERIFY2(!refused, std::to_string(k).c_str());
        QCOMPARE(refused.error().code, ErrorCode::Internal);
        QVERIFY2(refused.error().message.find("output") != std::string::npos,
                 refused.error().message.c_str());
    }
}

void TestChunkMerge::misshapenOutputsAreRefusedWithNoResult() {
    const lab::GraphSubmission s = rowsSubmission(7);
    const Computed computed = computeChunks(s, 3);
    auto withOutput = [&](std::size_t c, std::size_t o, Tensor value) {
        std::vector<std::vector<Tensor>> outputs = computed.outputs;
        outputs[c][o] = std::move(value);
        return lab::mergeChunkOutputs(s, computed.chunks, outputs);
    };
    const std::int64_t lastRows = rowsOf(computed.chunks[2]);
    for (auto&& [refused, why] : {
             std::pair{withOutput(1, 0, randomTensor(DType::F32, {2, 5}, 9)), "a wider row"},
             std::pair{withOutput(1, 1, randomTensor(DType::F32, {3, 2}, 9)), "fewer columns"},
             std::pair{withOutput(0, 0, randomTensor(DType::F64, {2, 4}, 9)), "float64"},
             std::pair{withOutput(2, 0, randomTensor(DType::F32, {lastRows + 1, 4}, 9)),
                       "past the batch"},
         }) {
        QVERIFY2(!refused, why);
        QCOMPARE(refused.error().code, ErrorCode::ShapeMismatch);
    }
    // Summed outputs: parts of different shapes, or of an integer dtype.
    const lab::GraphSubmission summed = reducedSubmission(3, Kind::Sum);
    const Computed sums = computeChunks(summed, 3);
    std::vector<std::vector<Tensor>> outputs = sums.outputs;
    outputs[1][1] = randomTensor(DType::F32, {4}, 10);
    auto refused = lab::mergeChunkOutputs(summed, sums.chunks, outputs);
    QVERIFY(!refused);
    QCOMPARE(refused.error().code, ErrorCode::ShapeMismatch);
    for (std::vector<Tensor>& chunkOutputs : outputs)
        chunkOutputs[1] = Tensor::allocate(DType::I32, {3}).value();
    refused = lab::mergeChunkOutputs(summed, sums.chunks, outputs);
    QVERIFY(!refused);
    QCOMPARE(refused.error().code, ErrorCode::UnsupportedDtype);

    // A range whose output lacks a row, or has one too many, fits inside the whole: the merge
    // refuses it rather than leave a row unwritten or overwrite the next range's.
    const Tensor& shortPart = computed.outputs[0][0];
    const Tensor fewer =
        goblin::plan::sliceAlong(shortPart, 0, 0, shortPart.shape()[0] - 1).value();
    const auto gap = withOutput(0, 0, fewer);
    QVERIFY(!gap);
    QCOMPARE(gap.error().code, ErrorCode::ShapeMismatch);
    QVERIFY2(gap.error().message.find("rows along dim 0") != std::string::npos,
             gap.error().message.c_str());
    const Tensor more =
        randomTensor(DType::F32, {shortPart.shape()[0] + 1, shortPart.shape()[1]}, 11);
    const auto overlap = withOutput(0, 0, more);
    QVERIFY(!overlap);
    QCOMPARE(overlap.error().code, ErrorCode::ShapeMismatch);
}

QTEST_APPLESS_MAIN(TestChunkMerge)
#include "test_chunk_merge.moc"
