// Tests of replica comparison: honest computations in different orders and precisions agree,
// corrupted outputs never do, and exact outputs must match bit for bit.
#include <QtTest/QtTest>

#include <cmath>
#include <random>

#include "goblin/core/graph/graph.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "goblin/verify/output_agreement.hpp"

using goblin::core::DType;
using goblin::core::Tensor;
namespace graph = goblin::core::graph;
namespace ops = goblin::core::ops;
using goblin::verify::compareOutputs;
using goblin::verify::outputTolerances;

namespace {

constexpr std::int64_t kRows = 16, kInner = 300, kCols = 24;

Tensor randomF32(goblin::core::Shape shape, std::uint64_t seed) {
    Tensor t = Tensor::allocate(DType::F32, std::move(shape)).value();
    std::mt19937_64 engine(seed);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    for (float& v : t.values<float>())
        v = value(engine);
    return t;
}

// outputs: softmax(x·w, dim=-1) and argmax(x·w, dim=-1).
graph::Graph softmaxGraph(const Tensor& weights) {
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {kRows, kInner}}});
    g.constants.push_back({1, weights});
    g.nodes.push_back({2, ops::OpCode::Matmul, {0, 1}, {}});
    g.nodes.push_back({3, ops::OpCode::Softmax, {2}, {{"dim", std::int64_t{-1}}}});
    g.nodes.push_back({4, ops::OpCode::Argmax, {2}, {{"dim", std::int64_t{-1}}}});
    g.outputs = {3, 4};
    return g;
}

// The same computation in float64 with another summation order, rounded to f32 at the end.
std::vector<Tensor> float64Recomputation(const Tensor& x, const Tensor& w) {
    Tensor soft = Tensor::allocate(DType::F32, {kRows, kCols}).value();
    Tensor arg = Tensor::allocate(DType::I64, {kRows}).value();
    for (std::int64_t i = 0; i < kRows; ++i) {
        std::vector<double> row(kCols);
        for (std::int64_t j = 0; j < kCols; ++j) {
            double sum = 0;
            for (std::int64_t k = kInner - 1; k >= 0; --k)
                sum += double(x.values<float>()[i * kInner + k]) * w.values<float>()[k * kCols + j];
            row[j] = sum;
        }
        const double top = *std::max_element(row.begin(), row.end());
        double total = 0;
        for (double v : row)
            total += std::exp(v - top);
        for (std::int64_t j = 0; j < kCols; ++j)
            soft.values<float>()[i * kCols + j] =
                static_cast<float>(std::exp(row[j] - top) / total);
        arg.values<std::int64_t>()[i] = std::max_element(row.begin(), row.end()) - row.begin();
    }
    return {soft, arg};
}

Tensor copyOf(const Tensor& t) {
    Tensor copy = Tensor::allocate(t.dtype(), t.shape()).value();
    std::copy(t.bytes().begin(), t.bytes().end(), copy.bytes().begin());
    return copy;
}

} // namespace

class TestOutputAgreement : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void honestComputationsAgree();
    void corruptionIsCaught();
    void exactOutputsMustMatchBitForBit();
    void wrongShapeOrCountDisagrees();
    void budgetsAddAlongTheAncestry();
    void sharedAncestorsCountOnce();

private:
    struct Case {
        graph::Graph g;
        graph::GraphPlan plan;
        Tensor x, w;
        std::vector<Tensor> reference;
    };
    static Case makeCase(std::uint64_t seed) {
        Case c{{}, {}, randomF32({kRows, kInner}, seed), randomF32({kInner, kCols}, seed + 1), {}};
        c.g = softmaxGraph(c.w);
        c.plan = graph::validateGraph(c.g).value();
        c.reference = goblin::reference::runGraph(c.g, c.plan, std::span(&c.x, 1)).value();
        return c;
    }
};

void TestOutputAgreement::honestComputationsAgree() {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        Case c = makeCase(seed * 10);
        const auto tolerances = outputTolerances(c.g, c.plan);
        const auto other = float64Recomputation(c.x, c.w);
        // argmax of near-ties may legitimately differ between orders; compare it only when the
        // two agree on it (exactness is tested separately).
        auto agreement = compareOutputs(std::span(tolerances).first(1),
                                        std::span(c.reference).first(1), std::span(other).first(1));
        QVERIFY2(agreement.agree, agreement.reason.c_str());
        QVERIFY(agreement.worstRatio < 1);
        QVERIFY(compareOutputs(tolerances, c.reference, c.reference).agree);
    }
}

void TestOutputAgreement::corruptionIsCaught() {
    Case c = makeCase(7);
    const auto tolerances = outputTolerances(c.g, c.plan);
    const float largest = *std::max_element(c.reference[0].values<float>().begin(),
                                            c.reference[0].values<float>().end());
    for (float delta : {1e-2f, 1e-3f}) {
        std::vector<Tensor> bad{copyOf(c.reference[0]), copyOf(c.reference[1])};
        bad[0].values<float>()[5] += delta * largest;
        const auto agreement = compareOutputs(tolerances, c.reference, bad);
        QVERIFY2(!agreement.agree, QByteArray::number(delta).constData());
        QVERIFY(agreement.reason.find("output 0") != std::string::npos);
    }
    std::vector<Tensor> nan{copyOf(c.reference[0]), copyOf(c.reference[1])};
    nan[0].values<float>()[0] = NAN;
    QVERIFY(!compareOutputs(tolerances, c.reference, nan).agree);
}

void TestOutputAgreement::exactOutputsMustMatchBitForBit() {
    Case c = makeCase(3);
    const auto tolerances = outputTolerances(c.g, c.plan);
    QCOMPARE(tolerances[1].budget > 0,
             true); // argmax inherits the matmul's budget, but is an integer
    std::vector<Tensor> bad{copyOf(c.reference[0]), copyOf(c.reference[1])};
    bad[1].values<std::int64_t>()[2] = (bad[1].values<std::int64_t>()[2] + 1) % kCols;
    const auto agreement = compareOutputs(tolerances, c.reference, bad);
    QVERIFY(!agreement.agree);
    QVERIFY(agreement.reason.find("output 1") != std::string::npos);
}

void TestOutputAgreement::wrongShapeOrCountDisagrees() {
    Case c = makeCase(5);
    const auto tolerances = outputTolerances(c.g, c.plan);
    QVERIFY(!compareOutputs(tolerances, c.reference, std::span(c.reference).first(1)).agree);
    std::vector<Tensor> wrong{randomF32({kRows, kCols + 1}, 1), copyOf(c.reference[1])};
    const auto agreement = compareOutputs(tolerances, c.reference, wrong);
    QVERIFY(!agreement.agree);
    QVERIFY(agreement.reason.find("shape") != std::string::npos);
}

void TestOutputAgreement::budgetsAddAlongTheAncestry() {
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {8, 4}}});
    g.nodes.push_back({1, ops::OpCode::Neg, {0}, {}});
    g.nodes.push_back({2, ops::OpCode::Exp, {1}, {}});
    g.nodes.push_back({3, ops::OpCode::Sum, {2}, {{"dims", ops::IntList{0}}}});
    g.outputs = {1, 2, 3};
    const auto plan = graph::validateGraph(g).value();
    const auto tolerances = outputTolerances(g, plan);
    QCOMPARE(tolerances[0].budget, 0.0);           // neg is exact
    QCOMPARE(tolerances[1].budget, 4.0);           // exp: 4 ulps
    QCOMPARE(tolerances[2].budget, 4.0 + (8 + 2)); // + sum over 8 elements
}

void TestOutputAgreement::sharedAncestorsCountOnce() {
    // x_{i+1} = exp(x_i) + exp(x_i)·1 reuses x_i twice: 40 levels have 2^40 paths from the first
    // exp to the output. Each ancestor counts once, so the budget is 40 exps and 40 adds/muls.
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {4}}});
    graph::ValueId last = 0, next = 1;
    constexpr int kLevels = 40;
    for (int level = 0; level < kLevels; ++level) {
        const graph::ValueId e = next++, m = next++, a = next++;
        g.nodes.push_back({e, ops::OpCode::Exp, {last}, {}});
        g.nodes.push_back({m, ops::OpCode::Mul, {e, e}, {}});
        g.nodes.push_back({a, ops::OpCode::Add, {e, m}, {}});
        last = a;
    }
    g.outputs = {last};
    const auto plan = graph::validateGraph(g).value();
    const double budget = outputTolerances(g, plan)[0].budget;
    // An elementwise op's K is its input's size (4).
    const auto info = [](ops::OpCode op) {
        const auto& tolerance = ops::opInfo(op).tolerance;
        return tolerance.cls == ops::ToleranceClass::Exact
                   ? 0.0
                   : tolerance.ulps + tolerance.ulpsPerReduced * 4;
    };
    const double perLevel =
        info(ops::OpCode::Exp) + info(ops::OpCode::Mul) + info(ops::OpCode::Add);
    QCOMPARE(budget, kLevels * perLevel);
}

QTEST_GUILESS_MAIN(TestOutputAgreement)
#include "test_output_agreement.moc"
