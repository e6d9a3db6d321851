// Tests of the node's cheap graph audit: honest graphs with matmuls (a chain, a batched broadcast
// matmul, integer and non-finite cases) pass; a wrong witness, a wrong cheap node downstream of an
// honest witness, and outputs made consistent with a wrong witness fail. Witness selection keeps
// the largest matmuls when the outputs are capped; the worker's keyed random stream is repeatable.
#include <QtTest/QtTest>

#include <algorithm>
#include <limits>

#include "goblin/core/random_source.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "graph/cheap_audit.hpp"
#include "graph/graph_witnesses.hpp"
#include "graph/keyed_random.hpp"

using goblin::core::DType;
using goblin::core::Tensor;
namespace graph = goblin::core::graph;
namespace ops = goblin::core::ops;
namespace lab = goblin::labnode;

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

// x [8, 64] @ w1 [64, 64] → relu → @ w2 [64, 16] → sum over dim 1: output the row sums only.
graph::Graph chainGraph(DType dtype = DType::F32) {
    graph::Graph g;
    g.inputs.push_back({0, {dtype, {8, 64}}});
    g.inputs.push_back({1, {dtype, {64, 64}}});
    g.inputs.push_back({2, {dtype, {64, 16}}});
    g.nodes.push_back({3, ops::OpCode::Matmul, {0, 1}, {}});
    g.nodes.push_back({4, ops::OpCode::Relu, {3}, {}});
    g.nodes.push_back({5, ops::OpCode::Matmul, {4, 2}, {}});
    g.nodes.push_back({6, ops::OpCode::Sum, {5}, {{"dims", ops::IntList{1}}}});
    g.outputs = {6};
    return g;
}

std::vector<Tensor> chainInputs(DType dtype = DType::F32) {
    return {randomTensor(dtype, {8, 64}, 1), randomTensor(dtype, {64, 64}, 2),
            randomTensor(dtype, {64, 16}, 3)};
}

struct Prepared {
    graph::Graph graph;
    graph::GraphPlan plan;
    std::size_t witnesses = 0;
};

Prepared prepare(graph::Graph g, std::size_t maxOutputs = 64) {
    Prepared prepared{std::move(g), {}, 0};
    prepared.plan = graph::validateGraph(prepared.graph).value();
    prepared.witnesses = lab::addWitnessOutputs(prepared.graph, prepared.plan, maxOutputs);
    return prepared;
}

lab::CheapAuditReport audit(const Prepared& p, const std::vector<Tensor>& inputs,
                            const std::vector<Tensor>& claimed, std::uint64_t seed = 7) {
    goblin::core::SeededRandom random(seed);
    return lab::runCheapAudit(p.graph, p.plan, inputs, claimed, {}, random);
}

} // namespace

class TestCheapAudit : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void honestChainPasses();
    void honestBatchedMatmulPasses();
    void integerAndNonFiniteMatmulsAreRecomputed();
    void wrongWitnessFails();
    void wrongCheapNodeDownstreamFails();
    void outputsConsistentWithAWrongWitnessFail();
    void cappedWitnessesKeepTheLargestMatmuls();
    void sharedProbesOfConstantWeights();
    void keyedRandomIsAStreamPerKey();
};

void TestCheapAudit::honestChainPasses() {
    for (DType dtype : {DType::F32, DType::F64}) {
        const Prepared p = prepare(chainGraph(dtype));
        QCOMPARE(p.witnesses, std::size_t{2});
        QCOMPARE(p.graph.outputs, (std::vector<graph::ValueId>{6, 3, 5}));
        const std::vector<Tensor> inputs = chainInputs(dtype);
        const auto claimed = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
        for (std::uint64_t seed = 1; seed <= 20; ++seed) {
            const lab::CheapAuditReport report = audit(p, inputs, claimed, seed);
            QVERIFY2(report.passed, report.reason.c_str());
            QCOMPARE(report.checked, std::size_t{2});
            QCOMPARE(report.recomputed, std::size_t{0});
            QVERIFY(report.maxErrorRatio < 1.0);
        }
    }
}

void TestCheapAudit::honestBatchedMatmulPasses() {
    // a [2, 3, 5, 64] @ b [3, 64, 6] (b broadcast over the first dim) → exp → outputs both.
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {2, 3, 5, 64}}});
    g.inputs.push_back({1, {DType::F32, {3, 64, 6}}});
    g.nodes.push_back({2, ops::OpCode::Matmul, {0, 1}, {}});
    g.nodes.push_back({3, ops::OpCode::Exp, {2}, {}});
    g.outputs = {3, 2};
    const Prepared p = prepare(g);
    QCOMPARE(p.witnesses, std::size_t{0}); // already an output
    const std::vector<Tensor> inputs{randomTensor(DType::F32, {2, 3, 5, 64}, 4),
                                     randomTensor(DType::F32, {3, 64, 6}, 5)};
    const auto claimed = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
    const lab::CheapAuditReport report = audit(p, inputs, claimed);
    QVERIFY2(report.passed, report.reason.c_str());
    QCOMPARE(report.checked, std::size_t{1});
    // One element of the last batch matrix (batch 1, 2), far past its bound.
    std::vector<Tensor> wrong{claimed[0], copyOf(claimed[1])};
    wrong[1].values<float>()[wrong[1].elementCount() - 1] += 1.0f;
    const lab::CheapAuditReport caught = audit(p, inputs, wrong);
    QVERIFY(!caught.passed);
    QVERIFY2(caught.reason.find("batch matrix 5") != std::string::npos, caught.reason.c_str());
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
    const lab::CheapAuditReport report = audit(p, inputs, honest);
    QVERIFY2(report.passed, report.reason.c_str());
    QVERIFY(report.recomputed >= 1);
}

void TestCheapAudit::wrongWitnessFails() {
    const Prepared p = prepare(chainGraph());
    const std::vector<Tensor> inputs = chainInputs();
    auto claimed = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
    claimed[1] = copyOf(claimed[1]); // the witness of node 3
    claimed[1].values<float>()[5 * 64 + 7] += 0.5f;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        const lab::CheapAuditReport report = audit(p, inputs, claimed, seed);
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
    const lab::CheapAuditReport report = audit(p, inputs, claimed);
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
    first.values<float>()[3 * 64 + 1] += 2.0f;
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
        const lab::CheapAuditReport report = audit(p, inputs, claimed, seed);
        QVERIFY(!report.passed);
        QVERIFY2(report.reason.find("node 3 (matmul)") != std::string::npos, report.reason.c_str());
    }
}

void TestCheapAudit::cappedWitnessesKeepTheLargestMatmuls() {
    // Room for one witness: node 3 (8·64·64 multiply-adds) beats node 5 (8·64·16).
    const Prepared p = prepare(chainGraph(), 2);
    QCOMPARE(p.witnesses, std::size_t{1});
    QCOMPARE(p.graph.outputs, (std::vector<graph::ValueId>{6, 3}));
    const std::vector<Tensor> inputs = chainInputs();
    const auto claimed = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
    const lab::CheapAuditReport report = audit(p, inputs, claimed);
    QVERIFY2(report.passed, report.reason.c_str());
    QCOMPARE(report.checked, std::size_t{1});
    QCOMPARE(report.recomputed, std::size_t{1});
    QCOMPARE(prepare(chainGraph(), 1).witnesses, std::size_t{0});
    // A short inner size is cheaper to recompute than to check: no witness.
    graph::Graph small;
    small.inputs.push_back({0, {DType::F32, {8, lab::kMinHeavyInner - 1}}});
    small.inputs.push_back({1, {DType::F32, {lab::kMinHeavyInner - 1, 8}}});
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
    lab::AuditProbes probes;
    goblin::core::SeededRandom random(5);
    for (std::uint64_t seed = 1; seed <= 3; ++seed) { // three tasks: different x, same weights
        const std::vector<Tensor> inputs{randomTensor(DType::F32, {8, 64}, 100 + seed)};
        auto claimed = goblin::reference::runGraph(p.graph, p.plan, inputs).value();
        const auto honest =
            lab::runCheapAudit(p.graph, p.plan, inputs, claimed, {}, random, &probes);
        QVERIFY2(honest.passed, honest.reason.c_str());
        QCOMPARE(honest.checked, std::size_t{2});
        claimed[2] = copyOf(claimed[2]); // node 5's witness
        claimed[2].values<float>()[4 * 16 + 9] -= 0.5f;
        const auto caught =
            lab::runCheapAudit(p.graph, p.plan, inputs, claimed, {}, random, &probes);
        QVERIFY(!caught.passed);
        QVERIFY2(caught.reason.find("node 5 (matmul)") != std::string::npos, caught.reason.c_str());
    }
}

void TestCheapAudit::keyedRandomIsAStreamPerKey() {
    goblin::core::SeededRandom seeds(11);
    const lab::KeyedRandom::Key key = lab::KeyedRandom::drawKey(seeds);
    const lab::KeyedRandom::Key other = lab::KeyedRandom::drawKey(seeds);
    lab::KeyedRandom a(key), b(key), c(other);
    std::vector<std::uint64_t> fromA, fromB, fromC;
    for (int i = 0; i < 1000; ++i) {
        fromA.push_back(a.next64());
        fromB.push_back(b.next64());
        fromC.push_back(c.next64());
    }
    QCOMPARE(fromA, fromB);
    QVERIFY(fromA != fromC);
    std::sort(fromA.begin(), fromA.end());
    QVERIFY(std::adjacent_find(fromA.begin(), fromA.end()) == fromA.end());
}

QTEST_GUILESS_MAIN(TestCheapAudit)
#include "test_cheap_audit.moc"
