// Tests of the node's cheap graph audit: honest graphs with matmuls (a chain, a batched broadcast
// matmul, integer and non-finite cases) pass; a wrong witness, a wrong cheap node downstream of an
// honest witness, and outputs made consistent with a wrong witness fail. Witness selection keeps
// the largest matmuls when the outputs are capped. Convolutions (conv2d with stride, padding,
// dilation and groups, a conv → relu → conv chain, its input and weight gradients; f32 and f64)
// are checked the same way: honest values pass, one element 3× its own bound off is caught, a
// wrong witness and outputs consistent with it fail.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <limits>

#include "goblin/compute/blas_conv.hpp"
#include "goblin/compute/blas_matmul.hpp"
#include "goblin/core/random_source.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "goblin/verify/cheap_audit.hpp"
#include "goblin/verify/graph_witnesses.hpp"
#include "support/tensor_magnitudes.hpp"

using goblin::core::DType;
using goblin::core::Tensor;
namespace graph = goblin::core::graph;
namespace ops = goblin::core::ops;
namespace verify = goblin::verify;
using goblin::testing::absF64;

namespace {

Tensor randomTensor(DType dtype, goblin::core::Shape shape, std::uint64_t seed) {
    Tensor t = Tensor::allocate(dtype, std::move(shape)).value();
    goblin::core::SeededRandom random(seed);
    if (dtype == DType::F32)
        for (float& v : t.values<float>())
            v = static_cast<float>(random.uniform01() * 2.0 - 1.0);
    else if (dtype == DType::F64)
        for (double& v : t.values<double>())
            v = random.uniform01() * 2.0 - 1.0;
    else
        for (std::int32_t& v : t.values<std::int32_t>())
            v = static_cast<std::int32_t>(random.next64() % 200) - 100;
    return t;
}

Tensor copyOf(const Tensor& t) {
    Tensor copy = Tensor::allocate(t.dtype(), t.shape()).value();
    std::copy(t.bytes().begin(), t.bytes().end(), copy.bytes().begin());
    return copy;
}

// The chain's inner size: long enough that a canonical matmul is checked by Freivalds rather
// than recomputed.
constexpr std::int64_t kInner = 128;

// x [8, K] @ w1 [K, K] → relu → @ w2 [K, 16] → sum over dim 1: output the row sums only.
graph::Graph chainGraph(DType dtype = DType::F32, std::int64_t inner = kInner) {
    graph::Graph g;
    g.inputs.push_back({0, {dtype, {8, inner}}});
    g.inputs.push_back({1, {dtype, {inner, inner}}});
    g.inputs.push_back({2, {dtype, {inner, 16}}});
    g.nodes.push_back({3, ops::OpCode::Matmul, {0, 1}, {}});
    g.nodes.push_back({4, ops::OpCode::Relu, {3}, {}});
    g.nodes.push_back({5, ops::OpCode::Matmul, {4, 2}, {}});
    g.nodes.push_back({6, ops::OpCode::Sum, {5}, {{"dims", ops::IntList{1}}}});
    g.outputs = {6};
    return g;
}

std::vector<Tensor> chainInputs(DType dtype = DType::F32, std::int64_t inner = kInner) {
    return {randomTensor(dtype, {8, inner}, 1), randomTensor(dtype, {inner, inner}, 2),
            randomTensor(dtype, {inner, 16}, 3)};
}

// x [2, 16, 11, 11] → conv2d w1 [32, 8, 3, 3] (stride (2, 1), padding (1, 2), dilation (1, 2),
// groups 2; K = 72, 16 channels per group) → relu → conv2d w2 [16, 32, 3, 3] (padding 1; K = 288),
// and the backward pair of the second conv for a given dy: its input gradient (K = 144, 32
// columns) and weight gradient (K = 2·6·11 = 132). Outputs: channel sums of the three results.
const ops::Attributes kConv1{{"stride", ops::IntList{2, 1}},
                             {"padding", ops::IntList{1, 2}},
                             {"dilation", ops::IntList{1, 2}},
                             {"groups", std::int64_t{2}}};
const ops::Attributes kConv2{{"padding", ops::IntList{1, 1}}};

graph::Graph convGraph(DType dtype = DType::F32) {
    graph::Graph g;
    g.inputs.push_back({0, {dtype, {2, 16, 11, 11}}});
    g.inputs.push_back({1, {dtype, {32, 8, 3, 3}}});
    g.inputs.push_back({2, {dtype, {16, 32, 3, 3}}});
    g.inputs.push_back({3, {dtype, {2, 16, 6, 11}}});
    ops::Attributes inputGrad = kConv2, weightGrad = kConv2;
    inputGrad["input_shape"] = ops::IntList{2, 32, 6, 11};
    weightGrad["weight_shape"] = ops::IntList{16, 32, 3, 3};
    g.nodes.push_back({4, ops::OpCode::Conv2d, {0, 1}, kConv1});
    g.nodes.push_back({5, ops::OpCode::Relu, {4}, {}});
    g.nodes.push_back({6, ops::OpCode::Conv2d, {5, 2}, kConv2});
    g.nodes.push_back({7, ops::OpCode::Sum, {6}, {{"dims", ops::IntList{1}}}});
    g.nodes.push_back({8, ops::OpCode::Conv2dInputGrad, {3, 2}, inputGrad});
    g.nodes.push_back({9, ops::OpCode::Conv2dWeightGrad, {5, 3}, weightGrad});
    g.nodes.push_back({10, ops::OpCode::Sum, {8}, {{"dims", ops::IntList{1}}}});
    g.nodes.push_back({11, ops::OpCode::Sum, {9}, {{"dims", ops::IntList{1}}}});
    g.outputs = {7, 10, 11};
    return g;
}

std::vector<Tensor> convInputs(DType dtype = DType::F32, std::uint64_t seed = 20) {
    return {randomTensor(dtype, {2, 16, 11, 11}, seed),
            randomTensor(dtype, {32, 8, 3, 3}, seed + 1),
            randomTensor(dtype, {16, 32, 3, 3}, seed + 2),
            randomTensor(dtype, {2, 16, 6, 11}, seed + 3)};
}

// An element's own bound γ_K·(op(|a|, |b|))_e for values of a's dtype (f32 or f64).
double ownBound(ops::OpCode op, const Tensor& a, const Tensor& b, const ops::Attributes& attrs,
                std::int64_t k, std::size_t element) {
    const Tensor magnitude =
        goblin::reference::runOp(op, std::vector<Tensor>{absF64(a), absF64(b)}, attrs).value();
    const double ku = static_cast<double>(k) * std::ldexp(1.0, a.dtype() == DType::F32 ? -24 : -53);
    return ku / (1.0 - ku) * magnitude.values<double>()[element];
}

struct Prepared {
    graph::Graph graph;
    graph::GraphPlan plan;
    std::size_t witnesses = 0;
};

Prepared prepare(graph::Graph g, std::size_t maxOutputs = 64) {
    Prepared prepared{std::move(g), {}, 0};
    prepared.plan = graph::validateGraph(prepared.graph).value();
    prepared.witnesses = verify::addWitnessOutputs(prepared.graph, prepared.plan, maxOutputs);
    return prepared;
}

// Where value `id` is among the graph's outputs (witnesses follow the plan order).
std::size_t positionOf(const Prepared& p, graph::ValueId id) {
    return static_cast<std::size_t>(std::find(p.graph.outputs.begin(), p.graph.outputs.end(), id) -
                                    p.graph.outputs.begin());
}

verify::CheapAuditReport audit(const Prepared& p, const std::vector<Tensor>& inputs,
                               const std::vector<Tensor>& claimed, std::uint64_t seed = 7) {
    goblin::core::SeededRandom random(seed);
    return verify::runCheapAudit(p.graph, p.plan, inputs, claimed, {}, random);
}

} // namespace

class TestCheapAudit : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void honestChainPasses();
    void honestBatchedMatmulPasses();
    void shortCanonicalMatmulsAreRecomputed();
    void integerAndNonFiniteMatmulsAreRecomputed();
    void wrongWitnessFails();
    void wrongCheapNodeDownstreamFails();
    void outputsConsistentWithAWrongWitnessFail();
    void cappedWitnessesKeepTheLargestMatmuls();
    void sharedProbesOfConstantWeights();
    void honestConvolutionsPass();
    void honestConvInAnotherOrderPasses();
    void wrongConvWitnessFails();
    void convElementThreeTimesItsBoundIsCaught();
    void outputsConsistentWithAWrongConvWitnessFail();
    void depthwiseAndShortConvsAreNotWitnessed();
    void blasValuesPassWhenTheGreyZoneIsCheckedExactly();
    void checkedGemmNodesAreTheHeavyOutputs();
    void blasConvolutionsPassWhenTheGreyZoneIsCheckedExactly();

private:
    void convElementThreeTimesItsBoundIsCaughtIn(DType dtype);
};

void TestCheapAudit::honestChainPasses() {
    for (DType dtype : {DType::F32, DType::F64}) {
        const Prepared p = prepare(chainGraph(dtype));
        QCOMPARE(p.witnesses, std::size_t{2});
        QCOMPARE(p.graph.outputs, (std::vector<graph::ValueId>{6, 3, 5}));
        const std::vector<Tensor> inputs = chainInputs(dtype);
        const auto claimed = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
        for (std::uint64_t seed = 1; seed <= 20; ++seed) {
            const verify::CheapAuditReport report = audit(p, inputs, claimed, seed);
            QVERIFY2(report.passed, report.reason.c_str());
            QCOMPARE(report.checked, std::size_t{2});
            QCOMPARE(report.recomputed, std::size_t{0});
            QVERIFY(report.maxErrorRatio < 1.0);
        }
    }
}

void TestCheapAudit::honestBatchedMatmulPasses() {
    // a [2, 3, 5, K] @ b [3, K, 6] (b broadcast over the first dim) → exp → outputs both.
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {2, 3, 5, kInner}}});
    g.inputs.push_back({1, {DType::F32, {3, kInner, 6}}});
    g.nodes.push_back({2, ops::OpCode::Matmul, {0, 1}, {}});
    g.nodes.push_back({3, ops::OpCode::Exp, {2}, {}});
    g.outputs = {3, 2};
    const Prepared p = prepare(g);
    QCOMPARE(p.witnesses, std::size_t{0}); // already an output
    const std::vector<Tensor> inputs{randomTensor(DType::F32, {2, 3, 5, kInner}, 4),
                                     randomTensor(DType::F32, {3, kInner, 6}, 5)};
    const auto claimed = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
    const verify::CheapAuditReport report = audit(p, inputs, claimed);
    QVERIFY2(report.passed, report.reason.c_str());
    QCOMPARE(report.checked, std::size_t{1});
    // One element of the last batch matrix (batch 1, 2), far past its bound.
    std::vector<Tensor> wrong{claimed[0], copyOf(claimed[1])};
    wrong[1].values<float>()[wrong[1].elementCount() - 1] += 1.0f;
    const verify::CheapAuditReport caught = audit(p, inputs, wrong);
    QVERIFY(!caught.passed);
    QVERIFY2(caught.reason.find("batch matrix 5") != std::string::npos, caught.reason.c_str());
}

void TestCheapAudit::shortCanonicalMatmulsAreRecomputed() {
    // Inner size 64: still witnessed (a BLAS volunteer's values are checked by Freivalds), but
    // canonical values are recomputed and compared bit for bit, which costs the node less there.
    for (DType dtype : {DType::F32, DType::F64}) {
        const Prepared p = prepare(chainGraph(dtype, 64));
        QCOMPARE(p.witnesses, std::size_t{2});
        const std::vector<Tensor> inputs = chainInputs(dtype, 64);
        const auto claimed = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
        const verify::CheapAuditReport report = audit(p, inputs, claimed);
        QVERIFY2(report.passed, report.reason.c_str());
        QCOMPARE(report.checked, std::size_t{0});
        QCOMPARE(report.recomputed, std::size_t{2});
        // One ulp off in one element of node 3's witness: within any Freivalds bound, but not
        // the canonical bits.
        auto lying = claimed;
        lying[1] = copyOf(lying[1]);
        if (dtype == DType::F32) {
            float& element = lying[1].values<float>()[5 * 64 + 7];
            element = std::nextafter(element, 1e9f);
        } else {
            double& element = lying[1].values<double>()[5 * 64 + 7];
            element = std::nextafter(element, 1e9);
        }
        const verify::CheapAuditReport caught = audit(p, inputs, lying);
        QVERIFY(!caught.passed);
        QVERIFY2(caught.reason.find("node 3 (matmul, recomputed) differs") != std::string::npos,
                 caught.reason.c_str());
    }
}

void TestCheapAudit::integerAndNonFiniteMatmulsAreRecomputed() {
    const Prepared ints = prepare(chainGraph(DType::I32));
    QCOMPARE(ints.witnesses, std::size_t{0}); // integer matmuls are cheap nodes
    const std::vector<Tensor> intInputs = chainInputs(DType::I32);
    auto claimed = goblin::reference::runGraph(ints.graph, ints.plan, intInputs).value();
    QVERIFY(audit(ints, intInputs, claimed).passed);
    claimed[0] = copyOf(claimed[0]);
    claimed[0].values<std::int32_t>()[3] += 1;
    QVERIFY(!audit(ints, intInputs, claimed).passed);

    // An infinite input makes the matmul's value non-finite: the node recomputes it, bit for bit.
    const Prepared p = prepare(chainGraph());
    std::vector<Tensor> inputs = chainInputs();
    inputs[0].values<float>()[0] = std::numeric_limits<float>::infinity();
    const auto honest = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
    const verify::CheapAuditReport report = audit(p, inputs, honest);
    QVERIFY2(report.passed, report.reason.c_str());
    QVERIFY(report.recomputed >= 1);

    // A NaN or an infinity claimed where the honest witness is finite: recomputed, and caught.
    const std::vector<Tensor> finite = chainInputs();
    const auto truth = goblin::reference::runGraph(p.graph, p.plan, finite).value();
    for (float lie :
         {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
        auto lying = truth;
        lying[1] = copyOf(lying[1]); // the witness of node 3
        lying[1].values<float>()[70] = lie;
        QVERIFY(!audit(p, finite, lying).passed);
    }
}

void TestCheapAudit::wrongWitnessFails() {
    const Prepared p = prepare(chainGraph());
    const std::vector<Tensor> inputs = chainInputs();
    auto claimed = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
    claimed[1] = copyOf(claimed[1]); // the witness of node 3
    claimed[1].values<float>()[5 * kInner + 7] += 0.5f;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        const verify::CheapAuditReport report = audit(p, inputs, claimed, seed);
        QVERIFY(!report.passed);
        QVERIFY2(report.reason.find("node 3 (matmul)") != std::string::npos, report.reason.c_str());
    }
}

void TestCheapAudit::wrongCheapNodeDownstreamFails() {
    const Prepared p = prepare(chainGraph());
    const std::vector<Tensor> inputs = chainInputs();
    auto claimed = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
    claimed[0] = copyOf(claimed[0]); // the row sums, after two honest witnesses
    float& sum = claimed[0].values<float>()[2];
    sum = std::nextafter(sum, 1e9f); // one ulp is enough: cheap nodes are bit for bit
    const verify::CheapAuditReport report = audit(p, inputs, claimed);
    QVERIFY(!report.passed);
    QVERIFY2(report.reason.find("output 0") != std::string::npos, report.reason.c_str());
}

void TestCheapAudit::outputsConsistentWithAWrongWitnessFail() {
    // The liar changes node 3's value and computes everything after it from that value: relu,
    // the second matmul and the sums are consistent with the lie.
    const Prepared p = prepare(chainGraph());
    const std::vector<Tensor> inputs = chainInputs();
    Tensor first =
        goblin::reference::runOp(ops::OpCode::Matmul, std::vector<Tensor>{inputs[0], inputs[1]}, {})
            .value();
    first.values<float>()[3 * kInner + 1] += 2.0f;
    const Tensor relu =
        goblin::reference::runOp(ops::OpCode::Relu, std::vector<Tensor>{first}, {}).value();
    const Tensor second =
        goblin::reference::runOp(ops::OpCode::Matmul, std::vector<Tensor>{relu, inputs[2]}, {})
            .value();
    const Tensor sums = goblin::reference::runOp(ops::OpCode::Sum, std::vector<Tensor>{second},
                                                 {{"dims", ops::IntList{1}}})
                            .value();
    const std::vector<Tensor> claimed{sums, first, second};
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        const verify::CheapAuditReport report = audit(p, inputs, claimed, seed);
        QVERIFY(!report.passed);
        QVERIFY2(report.reason.find("node 3 (matmul)") != std::string::npos, report.reason.c_str());
    }
}

void TestCheapAudit::cappedWitnessesKeepTheLargestMatmuls() {
    // Room for one witness: node 3 (8·K·K multiply-adds) beats node 5 (8·K·16).
    const Prepared p = prepare(chainGraph(), 2);
    QCOMPARE(p.witnesses, std::size_t{1});
    QCOMPARE(p.graph.outputs, (std::vector<graph::ValueId>{6, 3}));
    const std::vector<Tensor> inputs = chainInputs();
    const auto claimed = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
    const verify::CheapAuditReport report = audit(p, inputs, claimed);
    QVERIFY2(report.passed, report.reason.c_str());
    QCOMPARE(report.checked, std::size_t{1});
    QCOMPARE(report.recomputed, std::size_t{1});
    QCOMPARE(prepare(chainGraph(), 1).witnesses, std::size_t{0});
    // A short inner size is cheaper to recompute than to check: no witness.
    graph::Graph small;
    small.inputs.push_back({0, {DType::F32, {8, verify::kMinHeavyInner - 1}}});
    small.inputs.push_back({1, {DType::F32, {verify::kMinHeavyInner - 1, 8}}});
    small.nodes.push_back({2, ops::OpCode::Matmul, {0, 1}, {}});
    small.nodes.push_back({3, ops::OpCode::Relu, {2}, {}});
    small.outputs = {3};
    QCOMPARE(prepare(small).witnesses, std::size_t{0});
}

void TestCheapAudit::sharedProbesOfConstantWeights() {
    // w1 and w2 as constants (a job's weights): the audits of its tasks share their probes.
    graph::Graph g = chainGraph();
    const std::vector<Tensor> all = chainInputs();
    g.inputs.resize(1);
    g.constants.push_back({1, all[1]});
    g.constants.push_back({2, all[2]});
    const Prepared p = prepare(g);
    verify::AuditProbes probes;
    goblin::core::SeededRandom random(5);
    for (std::uint64_t seed = 1; seed <= 3; ++seed) { // three tasks: different x, same weights
        const std::vector<Tensor> inputs{randomTensor(DType::F32, {8, kInner}, 100 + seed)};
        auto claimed = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
        const auto honest =
            verify::runCheapAudit(p.graph, p.plan, inputs, claimed, {}, random, &probes);
        QVERIFY2(honest.passed, honest.reason.c_str());
        QCOMPARE(honest.checked, std::size_t{2});
        claimed[2] = copyOf(claimed[2]); // node 5's witness
        claimed[2].values<float>()[4 * 16 + 9] -= 0.5f;
        const auto caught =
            verify::runCheapAudit(p.graph, p.plan, inputs, claimed, {}, random, &probes);
        QVERIFY(!caught.passed);
        QVERIFY2(caught.reason.find("node 5 (matmul)") != std::string::npos, caught.reason.c_str());
    }
}

void TestCheapAudit::honestConvolutionsPass() {
    for (DType dtype : {DType::F32, DType::F64}) {
        const Prepared p = prepare(convGraph(dtype));
        QCOMPARE(p.witnesses, std::size_t{4});
        std::vector<graph::ValueId> outputs = p.graph.outputs;
        std::sort(outputs.begin() + 3, outputs.end());
        QCOMPARE(outputs, (std::vector<graph::ValueId>{7, 10, 11, 4, 6, 8, 9}));
        const std::vector<Tensor> inputs = convInputs(dtype);
        const auto claimed = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
        for (std::uint64_t seed = 1; seed <= 10; ++seed) {
            const verify::CheapAuditReport report = audit(p, inputs, claimed, seed);
            QVERIFY2(report.passed, report.reason.c_str());
            QCOMPARE(report.checked, std::size_t{4});
            QCOMPARE(report.recomputed, std::size_t{0});
            QVERIFY(report.maxErrorRatio < 1.0);
        }
    }
}

void TestCheapAudit::honestConvInAnotherOrderPasses() {
    // A backend that sums in another order (here: exactly in f64, rounded once) is honest too.
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {2, 16, 11, 11}}});
    g.inputs.push_back({1, {DType::F32, {32, 8, 3, 3}}});
    g.nodes.push_back({2, ops::OpCode::Conv2d, {0, 1}, kConv1});
    g.outputs = {2};
    const Prepared p = prepare(g);
    const std::vector<Tensor> all = convInputs();
    const std::vector<Tensor> inputs{all[0], all[1]};
    auto toF64 = [](const Tensor& t) {
        Tensor out = Tensor::allocate(DType::F64, t.shape()).value();
        for (std::size_t i = 0; i < out.values<double>().size(); ++i)
            out.values<double>()[i] = t.values<float>()[i];
        return out;
    };
    const Tensor wide =
        goblin::reference::runOp(ops::OpCode::Conv2d,
                                 std::vector<Tensor>{toF64(inputs[0]), toF64(inputs[1])}, kConv1)
            .value();
    Tensor rounded = Tensor::allocate(DType::F32, wide.shape()).value();
    for (std::size_t i = 0; i < rounded.values<float>().size(); ++i)
        rounded.values<float>()[i] = static_cast<float>(wide.values<double>()[i]);
    const auto reference = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
    QVERIFY(!std::equal(rounded.bytes().begin(), rounded.bytes().end(),
                        reference[0].bytes().begin())); // really another value
    for (std::uint64_t seed = 1; seed <= 10; ++seed) {
        const verify::CheapAuditReport report = audit(p, inputs, {rounded}, seed);
        QVERIFY2(report.passed, report.reason.c_str());
        QCOMPARE(report.checked, std::size_t{1});
    }
}

void TestCheapAudit::wrongConvWitnessFails() {
    const Prepared p = prepare(convGraph());
    const std::vector<Tensor> inputs = convInputs();
    const auto honest = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
    // Far past the bound, in each of the four witnesses: conv1, conv2, input grad, weight grad.
    const std::vector<std::pair<std::size_t, std::string>> witnesses{
        {positionOf(p, 4), "node 4 (conv2d)"},
        {positionOf(p, 6), "node 6 (conv2d)"},
        {positionOf(p, 8), "node 8 (conv2d_input_grad)"},
        {positionOf(p, 9), "node 9 (conv2d_weight_grad)"}};
    for (const auto& [position, name] : witnesses) {
        auto claimed = honest;
        claimed[position] = copyOf(claimed[position]);
        auto values = claimed[position].values<float>();
        values[values.size() / 3 + 5] += 0.25f;
        for (std::uint64_t seed = 1; seed <= 5; ++seed) {
            const verify::CheapAuditReport report = audit(p, inputs, claimed, seed);
            QVERIFY(!report.passed);
            QVERIFY2(report.reason.find(name) != std::string::npos, report.reason.c_str());
        }
    }
}

void TestCheapAudit::convElementThreeTimesItsBoundIsCaught() {
    for (DType dtype : {DType::F32, DType::F64})
        convElementThreeTimesItsBoundIsCaughtIn(dtype);
}

void TestCheapAudit::convElementThreeTimesItsBoundIsCaughtIn(DType dtype) {
    const Prepared p = prepare(convGraph(dtype));
    const std::vector<Tensor> inputs = convInputs(dtype);
    const auto honest = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
    const Tensor relu = goblin::reference::runOp(ops::OpCode::Relu,
                                                 std::vector<Tensor>{honest[positionOf(p, 4)]}, {})
                            .value();
    ops::Attributes inputGrad = kConv2, weightGrad = kConv2;
    inputGrad["input_shape"] = ops::IntList{2, 32, 6, 11};
    weightGrad["weight_shape"] = ops::IntList{16, 32, 3, 3};
    struct Case {
        std::size_t position;
        ops::OpCode op;
        Tensor a, b;
        ops::Attributes attrs;
        std::int64_t k;
        std::string name;
    };
    const std::vector<Case> cases{
        {positionOf(p, 4), ops::OpCode::Conv2d, inputs[0], inputs[1], kConv1, 72, "node 4 (conv2d"},
        {positionOf(p, 6), ops::OpCode::Conv2d, relu, inputs[2], kConv2, 288, "node 6 (conv2d"},
        {positionOf(p, 8), ops::OpCode::Conv2dInputGrad, inputs[3], inputs[2], inputGrad, 144,
         "node 8 (conv2d_input_grad"},
        {positionOf(p, 9), ops::OpCode::Conv2dWeightGrad, relu, inputs[3], weightGrad, 132,
         "node 9 (conv2d_weight_grad"}};
    for (const Case& c : cases) {
        const std::size_t count = honest[c.position].elementCount();
        for (std::size_t element : {count / 2 + 3, count - 7}) {
            const double bound = ownBound(c.op, c.a, c.b, c.attrs, c.k, element);
            QVERIFY(bound > 0.0);
            for (double sign : {1.0, -1.0}) {
                auto claimed = honest;
                claimed[c.position] = copyOf(claimed[c.position]);
                if (dtype == DType::F32) {
                    float& value = claimed[c.position].values<float>()[element];
                    value = static_cast<float>(value + sign * 3.0 * bound);
                } else {
                    claimed[c.position].values<double>()[element] += sign * 3.0 * bound;
                }
                for (std::uint64_t seed = 1; seed <= 8; ++seed) {
                    const verify::CheapAuditReport report = audit(p, inputs, claimed, seed);
                    QVERIFY2(!report.passed, c.name.c_str());
                    QVERIFY2(report.reason.find(c.name) != std::string::npos,
                             report.reason.c_str());
                }
            }
        }
    }
}

void TestCheapAudit::outputsConsistentWithAWrongConvWitnessFail() {
    // The liar changes conv1's value and computes everything after it from that value.
    const Prepared p = prepare(convGraph());
    const std::vector<Tensor> inputs = convInputs();
    const auto honest = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
    graph::Graph rest = p.graph; // conv1's value becomes an input of the rest of the graph
    rest.nodes.erase(rest.nodes.begin());
    rest.inputs.push_back({4, {DType::F32, {2, 32, 6, 11}}});
    rest.outputs = p.graph.outputs;
    const std::size_t at = positionOf(p, 4);
    rest.outputs.erase(rest.outputs.begin() + static_cast<std::ptrdiff_t>(at));
    const graph::GraphPlan restPlan = graph::validateGraph(rest).value();
    Tensor first = copyOf(honest[at]);
    first.values<float>()[2 * 66 + 13] += 1.0f;
    std::vector<Tensor> restInputs = inputs;
    restInputs.push_back(first);
    const auto after = goblin::reference::runGraph(rest, restPlan, restInputs).value();
    std::vector<Tensor> claimed = after;
    claimed.insert(claimed.begin() + static_cast<std::ptrdiff_t>(at), first);
    const std::size_t weightGrad = positionOf(p, 9);
    QVERIFY(!std::equal(claimed[weightGrad].bytes().begin(), claimed[weightGrad].bytes().end(),
                        honest[weightGrad].bytes().begin())); // the weight grad follows the lie
    for (std::uint64_t seed = 1; seed <= 10; ++seed) {
        const verify::CheapAuditReport report = audit(p, inputs, claimed, seed);
        QVERIFY(!report.passed);
        QVERIFY2(report.reason.find("node 4 (conv2d)") != std::string::npos, report.reason.c_str());
    }
}

void TestCheapAudit::depthwiseAndShortConvsAreNotWitnessed() {
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {1, 32, 8, 8}}});
    g.inputs.push_back({1, {DType::F32, {32, 1, 9, 9}}}); // depthwise: 1 channel per group
    g.inputs.push_back({2, {DType::F32, {32, 7, 3, 3}}}); // K = 63 < kMinHeavyInner
    g.nodes.push_back({3,
                       ops::OpCode::Conv2d,
                       {0, 1},
                       {{"groups", std::int64_t{32}}, {"padding", ops::IntList{4, 4}}}});
    g.nodes.push_back(
        {4,
         ops::OpCode::Slice,
         {3},
         {{"dim", std::int64_t{1}}, {"start", std::int64_t{0}}, {"end", std::int64_t{7}}}});
    g.nodes.push_back({5, ops::OpCode::Conv2d, {4, 2}, {}});
    g.outputs = {5};
    const Prepared p = prepare(g);
    QCOMPARE(p.witnesses, std::size_t{0});
    const std::vector<Tensor> inputs{randomTensor(DType::F32, {1, 32, 8, 8}, 30),
                                     randomTensor(DType::F32, {32, 1, 9, 9}, 31),
                                     randomTensor(DType::F32, {32, 7, 3, 3}, 32)};
    auto claimed = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
    QVERIFY(audit(p, inputs, claimed).passed);
    claimed[0] = copyOf(claimed[0]);
    claimed[0].values<float>()[1] = std::nextafter(claimed[0].values<float>()[1], 1e9f);
    QVERIFY(!audit(p, inputs, claimed).passed); // recomputed, bit for bit
}

QTEST_GUILESS_MAIN(TestCheapAudit)
void TestCheapAudit::blasValuesPassWhenTheGreyZoneIsCheckedExactly() {
    // The chain's two matmuls computed by OpenBLAS (another summation order: not the reference's
    // bits), everything else by the reference from those values, as a volunteer of a job verified
    // by Freivalds computes it. A short inner size (64: canonical values would be recomputed) is
    // checked by Freivalds too: BLAS values cannot be recomputed bit for bit.
    constexpr std::int64_t kShort = 64;
    const Prepared p = prepare(chainGraph(DType::F32, kShort));
    const std::vector<Tensor> inputs = chainInputs(DType::F32, kShort);
    goblin::reference::GraphRunHooks blas;
    blas.computeNode = [](const graph::GraphNode& node,
                          std::span<const Tensor> args) -> std::optional<goblin::Expected<Tensor>> {
        if (node.op != ops::OpCode::Matmul)
            return std::nullopt;
        return goblin::compute::blasMatmul(args[0], args[1]);
    };
    const auto claimed = goblin::reference::runGraph(p.graph, p.plan, inputs, blas).value();
    const auto exact = [&](const std::vector<Tensor>& values, std::uint64_t seed) {
        goblin::core::SeededRandom random(seed);
        return verify::runCheapAudit(p.graph, p.plan, inputs, values, {}, random, nullptr,
                                     verify::GreyZone::CheckExactly);
    };
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        const verify::CheapAuditReport report = exact(claimed, seed);
        QVERIFY2(report.passed, report.reason.c_str());
        QCOMPARE(report.checked, std::size_t{2});
    }
    // One element of node 3 at 0.95× its own bound, the rest consistent with it: within the
    // bound, so the exact check accepts it whenever Freivalds cannot decide (over its threshold
    // 0.8), where a bitwise recomputation would refuse an honest BLAS; at 3× it is refused.
    const std::size_t element = 3 * kShort + 1;
    const double bound = ownBound(ops::OpCode::Matmul, inputs[0], inputs[1], {}, kShort, element);
    auto shifted = [&](double factor) {
        Tensor first = goblin::compute::blasMatmul(inputs[0], inputs[1]).value();
        first.values<float>()[element] += static_cast<float>(factor * bound);
        const Tensor relu =
            goblin::reference::runOp(ops::OpCode::Relu, std::vector<Tensor>{first}, {}).value();
        const Tensor second = goblin::compute::blasMatmul(relu, inputs[2]).value();
        const Tensor sums = goblin::reference::runOp(ops::OpCode::Sum, std::vector<Tensor>{second},
                                                     {{"dims", ops::IntList{1}}})
                                .value();
        return std::vector<Tensor>{sums, first, second};
    };
    const std::vector<Tensor> near = shifted(0.95), far = shifted(3.0);
    std::size_t exactly = 0;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        const verify::CheapAuditReport report = exact(near, seed);
        QVERIFY2(report.passed, report.reason.c_str());
        exactly += report.exactlyChecked;
        const verify::CheapAuditReport caught = exact(far, seed);
        QVERIFY(!caught.passed);
        QVERIFY2(caught.reason.find("node 3 (matmul)") != std::string::npos, caught.reason.c_str());
    }
    QVERIFY2(exactly > 0, "the 0.95× element never reached the grey zone");
}

void TestCheapAudit::checkedGemmNodesAreTheHeavyOutputs() {
    // Both matmuls of the chain are witnessed; with room for one witness only the larger is an
    // output, so only it may be computed by a BLAS (the other is recomputed bit for bit).
    constexpr auto all = verify::GemmOps::WithConvGradients;
    QCOMPARE(verify::checkedGemmNodes(prepare(chainGraph()).graph, prepare(chainGraph()).plan, all),
             (std::vector<std::int64_t>{3, 5}));
    const Prepared capped = prepare(chainGraph(), 2);
    QCOMPARE(verify::checkedGemmNodes(capped.graph, capped.plan, all),
             (std::vector<std::int64_t>{3}));
    const Prepared ints = prepare(chainGraph(DType::I32));
    QVERIFY(verify::checkedGemmNodes(ints.graph, ints.plan, all).empty());
}

void TestCheapAudit::blasConvolutionsPassWhenTheGreyZoneIsCheckedExactly() {
    // The conv2d nodes of the conv graph (strided, padded, dilated, grouped; then a plain one) and
    // its input and weight gradients through im2col and OpenBLAS, the rest by the reference:
    // accepted for every seed. Volunteers of protocols before 9 are named the conv2ds alone.
    for (DType dtype : {DType::F32, DType::F64}) {
        const Prepared p = prepare(convGraph(dtype));
        QCOMPARE(verify::checkedGemmNodes(p.graph, p.plan, verify::GemmOps::MatmulAndConv2d),
                 (std::vector<std::int64_t>{4, 6}));
        const std::vector<std::int64_t> gemm =
            verify::checkedGemmNodes(p.graph, p.plan, verify::GemmOps::WithConvGradients);
        QCOMPARE(gemm, (std::vector<std::int64_t>{4, 6, 8, 9}));
        const std::vector<Tensor> inputs = convInputs(dtype);
        goblin::reference::GraphRunHooks blas;
        blas.computeNode =
            [&gemm](const graph::GraphNode& node,
                    std::span<const Tensor> args) -> std::optional<goblin::Expected<Tensor>> {
            if (std::find(gemm.begin(), gemm.end(), node.id) == gemm.end())
                return std::nullopt;
            return goblin::compute::blasConvolution(node.op, args[0], args[1], node.attrs);
        };
        const auto claimed = goblin::reference::runGraph(p.graph, p.plan, inputs, blas).value();
        const auto canonical = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
        QVERIFY(!std::equal(claimed[0].bytes().begin(), claimed[0].bytes().end(),
                            canonical[0].bytes().begin())); // another summation order
        for (std::uint64_t seed = 1; seed <= 10; ++seed) {
            goblin::core::SeededRandom random(seed);
            const verify::CheapAuditReport report =
                verify::runCheapAudit(p.graph, p.plan, inputs, claimed, {}, random, nullptr,
                                      verify::GreyZone::CheckExactly);
            QVERIFY2(report.passed, report.reason.c_str());
            QCOMPARE(report.checked, std::size_t{4});
        }
    }
}

#include "test_cheap_audit.moc"
