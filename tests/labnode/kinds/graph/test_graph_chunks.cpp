// Tests of kinds/graph/graph_chunks (splitIntoChunks, rangeCount, describeTasks,
// fillBoundaryInputs): an unsplit graph is one chunk of the whole inputs; batch ranges cover every
// row exactly once, in order, balanced, at the count the request (else the node) asks for clamped
// to the batch; whole inputs are shared and named by digest when worth it; a graph whose chunks do
// not keep their rows is refused; micro-batches get fresh dropout streams; a range over the stage
// budget becomes stages whose boundary inputs are filled from the stages they name, and only with
// values of the declared shape. (Merging is test_chunk_merge's.)
#include <QtTest/QtTest>

#include <algorithm>
#include <limits>

#include "goblin/core/graph/graph_json.hpp"
#include "goblin/net/content_digest.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "kinds/graph/graph_chunks.hpp"
#include "labnode/kinds/graph/graph_submissions.hpp"
#include "support/random_tensors.hpp"
#include "support/tensor_bits.hpp"

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

namespace {

constexpr lab::OutputMerge concatAlong(int dim) {
    return lab::OutputMerge{lab::OutputMerge::Kind::Concat, dim};
}

// x [B, 3] split along 0, t [4, B] split along 1, w [n] whole: y = x·w[:3] rows, s = Σ_0 t, and
// yᵀ [3, B] (its batch along dim 1).
graph::Graph rowsGraph(std::int64_t b, std::int64_t wide) {
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {b, 3}}});
    g.inputs.push_back({1, {DType::F32, {4, b}}});
    g.inputs.push_back({2, {DType::F32, {wide}}});
    g.nodes.push_back({3,
                       ops::OpCode::Slice,
                       {2},
                       {{"dim", std::int64_t{0}},
                        {"start", std::int64_t{0}},
                        {"end", std::int64_t{3}},
                        {"step", std::int64_t{1}}}});
    g.nodes.push_back({4, ops::OpCode::Mul, {0, 3}, {}});
    g.nodes.push_back({5, ops::OpCode::Sum, {1}, {{"dims", ops::IntList{0}}}});
    g.nodes.push_back({6, ops::OpCode::Permute, {4}, {{"dims", ops::IntList{1, 0}}}});
    g.outputs = {4, 5, 6};
    return g;
}

lab::GraphSubmission rowsSubmission(std::int64_t b, std::int64_t requested, std::int64_t wide) {
    return submissionOf(rowsGraph(b, wide),
                        {randomTensor(DType::F32, {b, 3}, 1), randomTensor(DType::F32, {4, b}, 2),
                         randomTensor(DType::F32, {wide}, 3)},
                        splitOf({0, 1, std::nullopt},
                                {concatAlong(0), concatAlong(0), concatAlong(1)}, b, requested));
}

// Element (i, j) of a 2-d f32 tensor.
float at(const Tensor& t, std::int64_t i, std::int64_t j) {
    return t.values<float>()[static_cast<std::size_t>(i * t.shape()[1] + j)];
}

// y = (x·W1)·W2 with x [8, 64] split in two ranges: each range holds about 36 KiB, over a 24 KiB
// stage budget (test_stage_inputs's chain).
constexpr std::int64_t kChainRows = 8, kChainWidth = 64, kChainBudget = 24 * 1024;

lab::GraphSubmission chainSubmission() {
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {kChainRows, kChainWidth}}});
    g.inputs.push_back({1, {DType::F32, {kChainWidth, kChainWidth}}});
    g.inputs.push_back({2, {DType::F32, {kChainWidth, kChainWidth}}});
    g.nodes.push_back({3, ops::OpCode::Matmul, {0, 1}, {}});
    g.nodes.push_back({4, ops::OpCode::Matmul, {3, 2}, {}});
    g.outputs = {4};
    return submissionOf(std::move(g),
                        {randomTensor(DType::F32, {kChainRows, kChainWidth}, 11),
                         randomTensor(DType::F32, {kChainWidth, kChainWidth}, 12),
                         randomTensor(DType::F32, {kChainWidth, kChainWidth}, 13)},
                        splitOf({0, std::nullopt, std::nullopt}, {concatAlong(0)}, kChainRows, 2));
}

// ((x·W1)·W2)·W3 with x [4, 64], W1 [64, 128], W2 and W3 [128, 128]: inner sizes 64, 128, 128;
// only the last product is an output.
lab::GraphSubmission productsSubmission() {
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {4, 64}}});
    g.inputs.push_back({1, {DType::F32, {64, 128}}});
    g.inputs.push_back({2, {DType::F32, {128, 128}}});
    g.inputs.push_back({3, {DType::F32, {128, 128}}});
    g.nodes.push_back({4, ops::OpCode::Matmul, {0, 1}, {}});
    g.nodes.push_back({5, ops::OpCode::Matmul, {4, 2}, {}});
    g.nodes.push_back({6, ops::OpCode::Matmul, {5, 3}, {}});
    g.outputs = {6};
    return submissionOf(
        std::move(g),
        {randomTensor(DType::F32, {4, 64}, 31), randomTensor(DType::F32, {64, 128}, 32),
         randomTensor(DType::F32, {128, 128}, 33), randomTensor(DType::F32, {128, 128}, 34)},
        std::nullopt);
}

std::vector<Tensor> runChunk(const lab::GraphChunk& chunk) {
    std::vector<Tensor> inputs;
    for (const goblin::net::TensorPtr& input : chunk.inputs)
        inputs.push_back(*input);
    return goblin::reference::runGraph(chunk.graph, chunk.plan, inputs).value();
}

} // namespace

class TestGraphChunks : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void anUnsplitGraphIsOneChunkOfTheWholeInputs();
    void batchRangesCoverEveryRowOnceInOrderAndBalanced();
    void theRequestedCountWinsAndEveryCountIsClampedToTheBatch();
    void wholeInputsAreSharedAndNamedByDigestOnlyWhenWorthIt();
    void aChunkWhoseOutputsDoNotKeepTheirRowsIsRefused();
    void microBatchesRunUnchangedWithFreshDropoutStreams();
    void aRangeOverTheStageBudgetBecomesStagesThatReadEachOther();
    void boundaryInputsAreFilledOnlyWithTheValueTheyName();
    void replicasDoNotWitnessShortProducts();
};

void TestGraphChunks::anUnsplitGraphIsOneChunkOfTheWholeInputs() {
    lab::GraphSubmission s = rowsSubmission(5, 3, 3);
    s.batch.reset();
    const auto chunks = lab::splitIntoChunks(s, 4, graph::GraphLimits{});
    QVERIFY2(chunks, chunks ? "" : chunks.error().message.c_str());
    QCOMPARE(chunks->size(), std::size_t{1});
    const lab::GraphChunk& chunk = chunks->front();
    QCOMPARE(chunk.offset, std::int64_t{0});
    QCOMPARE(chunk.range, std::size_t{0});
    QCOMPARE(chunk.stage, std::size_t{0});
    QCOMPARE(chunk.inputs.size(), s.inputs.size());
    for (std::size_t i = 0; i < s.inputs.size(); ++i) {
        QCOMPARE(chunk.inputs[i].get(), s.inputs[i].get()); // shared, not copied
        QVERIFY(!chunk.boundary.at(i));
        QVERIFY(chunk.inputDigests.at(i).empty()); // one task: nothing worth naming
        QCOMPARE(chunk.graph.inputs[i].spec.shape, s.graph.inputs[i].spec.shape);
    }
    QVERIFY(chunk.dependsOn.empty());
    // Its graph is the researcher's, witnesses appended after the outputs it keeps.
    QCOMPARE(chunk.researcherOutputs(), s.graph.outputs.size());
    QVERIFY(
        std::equal(s.graph.outputs.begin(), s.graph.outputs.end(), chunk.graph.outputs.begin()));
    QCOMPARE(chunk.mergedAs, (std::vector<std::size_t>{0, 1, 2}));
    QCOMPARE(chunk.tolerances.size(), chunk.graph.outputs.size());
    QVERIFY(chunk.withWitnesses(chunk.graph.outputs.size()));
    QCOMPARE(chunk.json, graph::encodeGraph(chunk.graph));
    QCOMPARE(lab::rangeCount(*chunks), std::size_t{1});
    QCOMPARE(lab::describeTasks(*chunks), std::string("1 task(s)"));
    QCOMPARE(lab::rangeCount({}), std::size_t{0});
}

void TestGraphChunks::batchRangesCoverEveryRowOnceInOrderAndBalanced() {
    constexpr std::int64_t kRows = 7;
    const lab::GraphSubmission s = rowsSubmission(kRows, 0, 3);
    const Tensor& x = *s.inputs[0];
    const Tensor& t = *s.inputs[1];
    for (std::int64_t requested = 1; requested <= kRows; ++requested) {
        const auto chunks = lab::splitIntoChunks(s, requested, graph::GraphLimits{});
        QVERIFY2(chunks, chunks ? "" : chunks.error().message.c_str());
        QCOMPARE(chunks->size(), static_cast<std::size_t>(requested));
        QCOMPARE(lab::rangeCount(*chunks), chunks->size());
        std::int64_t next = 0, fewest = kRows, most = 0;
        for (std::size_t c = 0; c < chunks->size(); ++c) {
            const lab::GraphChunk& chunk = (*chunks)[c];
            const std::int64_t rows = chunk.graph.inputs[0].spec.shape[0];
            QCOMPARE(chunk.range, c);
            QCOMPARE(chunk.offset, next); // contiguous, in order, from row 0
            QVERIFY(rows > 0);
            fewest = std::min(fewest, rows);
            most = std::max(most, rows);
            // Every marked input and every concatenated output carries the chunk's rows.
            QCOMPARE(chunk.graph.inputs[1].spec.shape, (Shape{4, rows}));
            QCOMPARE(chunk.graph.inputs[2].spec.shape, s.graph.inputs[2].spec.shape);
            QCOMPARE(chunk.plan.specs.at(4).shape, (Shape{rows, 3}));
            QCOMPARE(chunk.plan.specs.at(5).shape, (Shape{rows}));
            QCOMPARE(chunk.plan.specs.at(6).shape, (Shape{3, rows}));
            QCOMPARE(chunk.inputs[0]->shape(), (Shape{rows, 3}));
            QCOMPARE(chunk.inputs[1]->shape(), (Shape{4, rows}));
            for (std::int64_t r = 0; r < rows; ++r) {
                for (std::int64_t j = 0; j < 3; ++j)
                    QCOMPARE(at(*chunk.inputs[0], r, j), at(x, next + r, j));
                for (std::int64_t i = 0; i < 4; ++i)
                    QCOMPARE(at(*chunk.inputs[1], i, r), at(t, i, next + r));
            }
            next += rows;
        }
        QCOMPARE(next, kRows);       // every row once
        QVERIFY(most - fewest <= 1); // uneven splits differ by one row at most
    }
}

void TestGraphChunks::theRequestedCountWinsAndEveryCountIsClampedToTheBatch() {
    const graph::GraphLimits limits;
    struct Case {
        std::int64_t batch, requested, nodes, expected;
    };
    for (const Case& c : {Case{6, 0, 4, 4}, Case{6, 0, 0, 1}, Case{6, 0, -3, 1}, Case{6, 0, 50, 6},
                          Case{6, 2, 5, 2}, Case{6, 9, 1, 6}, Case{1, 4, 4, 1}}) {
        const auto chunks =
            lab::splitIntoChunks(rowsSubmission(c.batch, c.requested, 3), c.nodes, limits);
        QVERIFY2(chunks, chunks ? "" : chunks.error().message.c_str());
        QCOMPARE(static_cast<std::int64_t>(chunks->size()), c.expected);
    }
    // A batch of one row cannot be split: its one chunk is the graph as submitted.
    const lab::GraphSubmission one = rowsSubmission(1, 4, 3);
    const auto chunks = lab::splitIntoChunks(one, 4, limits).value();
    QCOMPARE(chunks.size(), std::size_t{1});
    QVERIFY(sameBits(*chunks[0].inputs[0], *one.inputs[0]));
    const std::vector<Tensor> given = lab::valuesOf(chunks[0].inputs);
    const auto whole = goblin::reference::runGraph(one.graph, one.plan, lab::valuesOf(one.inputs));
    const auto computed = goblin::reference::runGraph(chunks[0].graph, chunks[0].plan, given);
    QVERIFY(whole && computed);
    QVERIFY(sameBits(std::vector<Tensor>(computed->begin(), computed->begin() + 3), *whole));
}

void TestGraphChunks::wholeInputsAreSharedAndNamedByDigestOnlyWhenWorthIt() {
    const graph::GraphLimits limits;
    // w of 300 floats is worth naming (1200 bytes ≥ kMinNamedInputBytes); of 3, not.
    const std::int64_t big = 300;
    QVERIFY(big * static_cast<std::int64_t>(sizeof(float)) >=
            static_cast<std::int64_t>(lab::kMinNamedInputBytes));
    const lab::GraphSubmission named = rowsSubmission(6, 3, big);
    const std::string digest = goblin::net::tensorDigest(*named.inputs[2]);
    QVERIFY(!digest.empty());
    const auto namedChunks = lab::splitIntoChunks(named, 1, limits).value();
    QCOMPARE(namedChunks.size(), std::size_t{3});
    for (const lab::GraphChunk& chunk : namedChunks) {
        QCOMPARE(chunk.inputs[2].get(), named.inputs[2].get());
        QCOMPARE(chunk.inputDigests, (std::vector<std::string>{"", "", digest}));
    }
    const lab::GraphSubmission small = rowsSubmission(6, 3, 3);
    const auto smallChunks = lab::splitIntoChunks(small, 1, limits).value();
    for (const lab::GraphChunk& chunk : smallChunks) {
        QCOMPARE(chunk.inputs[2].get(), small.inputs[2].get());
        QCOMPARE(chunk.inputDigests, (std::vector<std::string>(3)));
    }
    // One task goes to different volunteers: nothing is named.
    const auto alone = lab::splitIntoChunks(rowsSubmission(6, 1, big), 1, limits).value();
    QCOMPARE(alone.size(), std::size_t{1});
    QCOMPARE(alone[0].inputDigests, (std::vector<std::string>(3)));
}

void TestGraphChunks::aChunkWhoseOutputsDoNotKeepTheirRowsIsRefused() {
    const graph::GraphLimits limits;
    // The batch summed away but marked as concatenated: a chunk of 3 rows has no 3 rows.
    graph::Graph summed;
    summed.inputs.push_back({0, {DType::F32, {6, 2}}});
    summed.nodes.push_back({1, ops::OpCode::Sum, {0}, {{"dims", ops::IntList{0}}}});
    summed.outputs = {1};
    auto refused = lab::splitIntoChunks(submissionOf(summed, {randomTensor(DType::F32, {6, 2}, 4)},
                                                     splitOf({0}, {concatAlong(0)}, 6, 2)),
                                        1, limits);
    QVERIFY(!refused);
    QCOMPARE(refused.error().code, goblin::ErrorCode::ShapeMismatch);
    QVERIFY2(refused.error().message.find("3 rows") != std::string::npos,
             refused.error().message.c_str());
    // Rows kept but marked "sum": a summed output must keep its shape.
    graph::Graph kept;
    kept.inputs.push_back({0, {DType::F32, {6, 2}}});
    kept.nodes.push_back({1, ops::OpCode::Relu, {0}, {}});
    kept.outputs = {1};
    refused = lab::splitIntoChunks(
        submissionOf(kept, {randomTensor(DType::F32, {6, 2}, 5)},
                     splitOf({0}, {lab::OutputMerge{lab::OutputMerge::Kind::Sum, 0}}, 6, 2)),
        1, limits);
    QVERIFY(!refused);
    QCOMPARE(refused.error().code, goblin::ErrorCode::ShapeMismatch);
    QVERIFY2(refused.error().message.find("changes shape") != std::string::npos,
             refused.error().message.c_str());
}

void TestGraphChunks::microBatchesRunUnchangedWithFreshDropoutStreams() {
    // A graph written for 2 rows, with two dropout masks drawing 6 and 64 numbers per run.
    constexpr std::int64_t kMicro = 2, kBatch = 8, kFirstOffset = 5;
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {kMicro, 3}}});
    g.nodes.push_back({1,
                       ops::OpCode::DropoutMask,
                       {},
                       {{"shape", ops::IntList{kMicro, 3}},
                        {"p", 0.5},
                        {"seed", std::int64_t{7}},
                        {"offset", kFirstOffset}}});
    g.nodes.push_back({2, ops::OpCode::Mul, {0, 1}, {}});
    g.nodes.push_back({3,
                       ops::OpCode::DropoutMask,
                       {},
                       {{"shape", ops::IntList{64}}, {"p", 0.5}, {"seed", std::int64_t{9}}}});
    g.outputs = {2, 3};
    const std::int64_t drawn = kMicro * 3 + 64;
    lab::BatchSplit batch =
        splitOf({0}, {concatAlong(0), lab::OutputMerge{lab::OutputMerge::Kind::Sum, 0}}, kBatch,
                kBatch / kMicro);
    batch.microBatch = kMicro;
    const lab::GraphSubmission s =
        submissionOf(g, {randomTensor(DType::F32, {kBatch, 3}, 6)}, batch);
    const auto chunks = lab::splitIntoChunks(s, 1, graph::GraphLimits{});
    QVERIFY2(chunks, chunks ? "" : chunks.error().message.c_str());
    QCOMPARE(static_cast<std::int64_t>(chunks->size()), kBatch / kMicro);
    std::vector<std::vector<Tensor>> masks;
    for (std::size_t c = 0; c < chunks->size(); ++c) {
        const lab::GraphChunk& chunk = (*chunks)[c];
        const auto step = static_cast<std::int64_t>(c) * drawn;
        QCOMPARE(chunk.offset, static_cast<std::int64_t>(c) * kMicro);
        QCOMPARE(chunk.graph.inputs[0].spec.shape, (Shape{kMicro, 3})); // never re-shaped
        QCOMPARE(std::get<std::int64_t>(chunk.graph.nodes[0].attrs.at("offset")),
                 kFirstOffset + step);
        if (c == 0) // the first micro-batch draws the graph's own streams
            QVERIFY(chunk.graph.nodes[2].attrs.count("offset") == 0);
        else
            QCOMPARE(std::get<std::int64_t>(chunk.graph.nodes[2].attrs.at("offset")), step);
        masks.push_back(runChunk(chunk));
    }
    // Fresh masks: no two micro-batches draw the same second mask.
    for (std::size_t a = 0; a < masks.size(); ++a)
        for (std::size_t b = a + 1; b < masks.size(); ++b)
            QVERIFY(!sameBits(masks[a][1], masks[b][1]));

    // An offset that leaves no room for the later micro-batches' streams is refused.
    g.nodes[0].attrs["offset"] = std::numeric_limits<std::int64_t>::max() - drawn / 2;
    auto refused = lab::splitIntoChunks(
        submissionOf(g, {randomTensor(DType::F32, {kBatch, 3}, 6)}, batch), 1, {});
    QVERIFY(!refused);
    QCOMPARE(refused.error().code, goblin::ErrorCode::InvalidInput);
}

void TestGraphChunks::aRangeOverTheStageBudgetBecomesStagesThatReadEachOther() {
    const lab::GraphSubmission s = chainSubmission();
    const auto whole = lab::splitIntoChunks(s, 1, graph::GraphLimits{});
    QVERIFY(whole);
    QCOMPARE(whole->size(), std::size_t{2}); // no budget: one chunk per range
    QVERIFY(whole->front().peakBytes > kChainBudget);

    auto staged = lab::splitIntoChunks(s, 1, graph::GraphLimits{}, lab::StageBudget{kChainBudget});
    QVERIFY2(staged, staged ? "" : staged.error().message.c_str());
    QVERIFY(staged->size() > 2);
    QCOMPARE(lab::rangeCount(*staged), std::size_t{2});
    const std::string told = lab::describeTasks(*staged);
    QVERIFY2(told.starts_with(std::to_string(staged->size()) + " task(s)"), told.c_str());
    QVERIFY2(told.find("2 batch range(s)") != std::string::npos, told.c_str());
    std::vector<std::vector<Tensor>> outputs;
    std::vector<std::size_t> mergedPerRange(2, 0);
    for (std::size_t c = 0; c < staged->size(); ++c) {
        lab::GraphChunk chunk = (*staged)[c];
        QVERIFY(chunk.whyWhole.empty());
        QVERIFY2(chunk.peakBytes <= kChainBudget, std::to_string(chunk.peakBytes).c_str());
        QCOMPARE(chunk.offset, (*whole)[chunk.range].offset);
        QCOMPARE(chunk.boundary.size(), chunk.inputs.size());
        for (std::size_t i = 0; i < chunk.inputs.size(); ++i) {
            if (!chunk.boundary[i]) {
                QVERIFY(chunk.inputs[i] != nullptr);
                continue;
            }
            // A boundary input names an earlier stage of its own range, listed as a dependency,
            // and stays null until that stage is decided.
            const lab::BoundarySource from = *chunk.boundary[i];
            QVERIFY(from.chunk < c);
            QCOMPARE((*staged)[from.chunk].range, chunk.range);
            QVERIFY(std::ranges::find(chunk.dependsOn, from.chunk) != chunk.dependsOn.end());
            QVERIFY(chunk.inputs[i] == nullptr);
        }
        QCOMPARE(chunk.stage > 0, !chunk.dependsOn.empty());
        for (std::size_t as : chunk.mergedAs)
            mergedPerRange[chunk.range] += as == lab::kNotMerged ? 0 : 1;
        auto filled = lab::fillBoundaryInputs(chunk, [&](std::size_t from) {
            return from < outputs.size() ? &outputs[from] : nullptr;
        });
        QVERIFY2(filled, filled ? "" : filled.error().message.c_str());
        outputs.push_back(runChunk(chunk));
    }
    // Each range's one researcher output is kept by exactly one of its stages.
    QCOMPARE(mergedPerRange, (std::vector<std::size_t>{1, 1}));
    // The stages compute the whole graph's bits (merging: test_chunk_merge).
    const auto merged = lab::mergeChunkOutputs(s, *staged, outputs);
    QVERIFY2(merged, merged ? "" : merged.error().message.c_str());
    const auto expected = goblin::reference::runGraph(s.graph, s.plan, lab::valuesOf(s.inputs));
    QVERIFY(expected.has_value());
    QVERIFY(sameBits(*merged, *expected));
}

void TestGraphChunks::boundaryInputsAreFilledOnlyWithTheValueTheyName() {
    const lab::GraphSubmission s = chainSubmission();
    const auto staged =
        lab::splitIntoChunks(s, 1, graph::GraphLimits{}, lab::StageBudget{kChainBudget}).value();
    const auto reader = std::ranges::find_if(
        staged, [](const lab::GraphChunk& chunk) { return !chunk.dependsOn.empty(); });
    QVERIFY(reader != staged.end());
    const std::size_t boundary = static_cast<std::size_t>(
        std::ranges::find_if(reader->boundary, [](const auto& b) { return b.has_value(); }) -
        reader->boundary.begin());
    QVERIFY(boundary < reader->inputs.size());
    const lab::BoundarySource from = *reader->boundary[boundary];
    const std::vector<Tensor> decided = runChunk(staged.at(from.chunk));
    QVERIFY(from.output < decided.size());

    auto fillWith = [&](const std::vector<Tensor>* given, std::size_t* asked) {
        lab::GraphChunk chunk = *reader;
        auto filled = lab::fillBoundaryInputs(chunk, [&](std::size_t c) {
            if (asked)
                *asked = c;
            return given;
        });
        return std::pair{std::move(filled), std::move(chunk)};
    };
    // Filled from the chunk and output it names; the given inputs stay as they were.
    std::size_t asked = lab::kNotMerged;
    auto [filled, chunk] = fillWith(&decided, &asked);
    QVERIFY2(filled, filled ? "" : filled.error().message.c_str());
    QCOMPARE(asked, from.chunk);
    QVERIFY(sameBits(*chunk.inputs[boundary], decided[from.output]));
    for (std::size_t i = 0; i < chunk.inputs.size(); ++i)
        if (i != boundary && !chunk.boundary[i])
            QCOMPARE(chunk.inputs[i].get(), reader->inputs[i].get());

    // Not at hand, too few outputs, the wrong shape or the wrong dtype: refused, never filled.
    const Shape& declared = reader->graph.inputs[boundary].spec.shape;
    Shape longer = declared;
    longer[0] += 1;
    std::vector<std::vector<Tensor>> bad{
        std::vector<Tensor>(decided.begin(),
                            decided.begin() + static_cast<std::ptrdiff_t>(from.output)),
        decided, decided};
    bad[1][from.output] = randomTensor(DType::F32, longer, 21);
    bad[2][from.output] = randomTensor(DType::F64, declared, 22);
    auto [missing, unfilled] = fillWith(nullptr, nullptr);
    QVERIFY(!missing);
    QCOMPARE(missing.error().code, goblin::ErrorCode::Internal);
    QVERIFY(unfilled.inputs[boundary] == nullptr);
    for (const std::vector<Tensor>& given : bad) {
        auto [refused, left] = fillWith(&given, nullptr);
        QVERIFY(!refused);
        QVERIFY(!refused.error().message.empty());
        QVERIFY(left.inputs[boundary] == nullptr);
    }
}

// With replicas the audit recomputes a product of inner size under 96 bit for bit, so planner 6
// does not ask for its value; a job planned before (planner 5) and a Freivalds job still do.
void TestGraphChunks::replicasDoNotWitnessShortProducts() {
    const auto witnessesOf = [](const lab::GraphSubmission& s, int planner) {
        auto chunks =
            lab::splitIntoChunks(s, 1, graph::GraphLimits{}, lab::StageBudget{0, planner});
        if (!chunks || chunks->size() != 1)
            return std::vector<graph::ValueId>{-1};
        const lab::GraphChunk& chunk = chunks->front();
        return std::vector<graph::ValueId>(chunk.graph.outputs.begin() + 1,
                                           chunk.graph.outputs.end());
    };
    lab::GraphSubmission s = productsSubmission();
    QCOMPARE(witnessesOf(s, lab::kCurrentPlanner), (std::vector<graph::ValueId>{5}));
    QCOMPARE(witnessesOf(s, 5), (std::vector<graph::ValueId>{4, 5}));
    s.verification = lab::GraphVerification::Freivalds;
    QCOMPARE(witnessesOf(s, lab::kCurrentPlanner), (std::vector<graph::ValueId>{4, 5}));
    // The chunk without the short product's witness still computes the researcher's output.
    s.verification = lab::GraphVerification::Replicas;
    const auto chunks = lab::splitIntoChunks(s, 1, graph::GraphLimits{}).value();
    QCOMPARE(chunks.front().witnesses, std::size_t{1});
    const std::vector<Tensor> got = runChunk(chunks.front());
    std::vector<Tensor> inputs;
    for (const goblin::net::TensorPtr& input : s.inputs)
        inputs.push_back(*input);
    const std::vector<Tensor> want = goblin::reference::runGraph(s.graph, s.plan, inputs).value();
    QCOMPARE(got.size(), std::size_t{2});
    QVERIFY(sameBits(got.front(), want.front()));
}

QTEST_APPLESS_MAIN(TestGraphChunks)
#include "test_graph_chunks.moc"
