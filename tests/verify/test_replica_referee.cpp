// Tests of the replica referee: canonical backends must agree bit for bit, a non-canonical one gets
// the output's derived tolerance, any disagreement asks for the node, and the node's replica wins.
#include <QtTest/QtTest>

#include <cmath>

#include "goblin/verify/replica_referee.hpp"
#include "support/random_tensors.hpp"

using namespace goblin;
using namespace goblin::verify;

namespace {

std::vector<verify::OutputTolerance> oneOutput(double budget) {
    return {verify::OutputTolerance{core::ops::TensorSpec{core::DType::F32, {4, 3}}, budget}};
}

Replica replica(std::string volunteer, std::string backend, const core::Tensor& output) {
    Replica made;
    made.attempt = 1;
    made.volunteerId = std::move(volunteer);
    made.backend = std::move(backend);
    made.outputs = {output};
    return made;
}

core::Tensor ulpOff(const core::Tensor& tensor) {
    core::Tensor copy = core::Tensor::allocate(tensor.dtype(), tensor.shape()).value();
    std::copy(tensor.bytes().begin(), tensor.bytes().end(), copy.bytes().begin());
    float& first = copy.values<float>()[0];
    first = std::nextafter(first, 10.0f);
    return copy;
}

} // namespace

class TestReplicaReferee : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void canonicalBackendsAreCompared() {
        QVERIFY(isCanonicalBackend("cpu-reference"));
        QVERIFY(isCanonicalBackend("opencl-graph"));
        QVERIFY(isCanonicalBackend("node-reference"));
        QVERIFY(!isCanonicalBackend("cpu-numpy"));
        QVERIFY(!isCanonicalBackend("opencl-graph "));
    }

    void canonicalReplicasMustBeEqual() {
        const core::Tensor y = goblin::testing::randomTensor(core::DType::F32, {4, 3}, 1);
        const auto same = judgeReplicas(oneOutput(100), {replica("v-a", "cpu-reference", y),
                                                         replica("v-b", "opencl-graph", y)});
        QCOMPARE(same.decision, Decision::Decided);
        QCOMPARE(same.verdicts.size(), std::size_t{2});
        QVERIFY(same.verdicts[0].accepted && same.verdicts[1].accepted);
        // One ulp is within a budget of 100 u, but not bit for bit: the node must decide.
        const auto off = judgeReplicas(oneOutput(100), {replica("v-a", "cpu-reference", y),
                                                        replica("v-b", "opencl-graph", ulpOff(y))});
        QCOMPARE(off.decision, Decision::NeedNodeReference);
    }

    void nonCanonicalReplicaGetsTheTolerance() {
        const core::Tensor y = goblin::testing::randomTensor(core::DType::F32, {4, 3}, 2);
        const auto within = judgeReplicas(oneOutput(100), {replica("v-a", "cpu-numpy", ulpOff(y)),
                                                           replica("v-b", "cpu-reference", y)});
        QCOMPARE(within.decision, Decision::Decided);
        QCOMPARE(within.decisive, std::size_t{1}); // the canonical replica's outputs are the result
        QVERIFY(within.verdicts[0].accepted && within.verdicts[0].ratio > 0);
        // A budget of 0 (an exact output) holds every backend to bit for bit.
        const auto exact = judgeReplicas(oneOutput(0), {replica("v-a", "cpu-numpy", ulpOff(y)),
                                                        replica("v-b", "cpu-reference", y)});
        QCOMPARE(exact.decision, Decision::NeedNodeReference);
    }

    void theNodeDecidesAgainstEveryone() {
        const core::Tensor y = goblin::testing::randomTensor(core::DType::F32, {4, 3}, 3);
        Replica node = replica("", "node-reference", y);
        const auto judged =
            judgeReplicas(oneOutput(100), {replica("v-a", "opencl-graph", ulpOff(y)),
                                           replica("v-b", "opencl-graph", ulpOff(y)), node});
        QCOMPARE(judged.decision, Decision::Decided);
        QCOMPARE(judged.decisive, std::size_t{2});
        QVERIFY(!judged.verdicts[0].accepted && !judged.verdicts[1].accepted);
        QVERIFY(judged.verdicts[0].reason.find("canonical") != std::string::npos);
    }

    // Protocol 10: a replica without the witnesses (the last outputs) is compared on the outputs
    // it has; the one with them decides, since the node's audit reads them; a witness that
    // differs is never compared (nothing reads the second copy), a researcher's output is.
    void aReplicaWithoutWitnessesIsComparedOnTheResearchersOutputs() {
        const core::Tensor y = goblin::testing::randomTensor(core::DType::F32, {4, 3}, 3);
        const core::Tensor witness = goblin::testing::randomTensor(core::DType::F32, {4, 3}, 4);
        const std::vector<OutputTolerance> tolerances = {oneOutput(0)[0], oneOutput(0)[0]};
        Replica full = replica("v-full", "cpu-reference", y);
        full.outputs.push_back(witness);
        const Replica without = replica("v-without", "cpu-reference", y);
        for (const auto& order : {std::vector<Replica>{without, full}, {full, without}}) {
            const auto judged = judgeReplicas(tolerances, order);
            QCOMPARE(judged.decision, Decision::Decided);
            QCOMPARE(order[judged.decisive].volunteerId, std::string("v-full"));
            QVERIFY(judged.verdicts[0].accepted && judged.verdicts[1].accepted);
        }
        const Replica wrong = replica("v-wrong", "cpu-reference", ulpOff(y));
        QCOMPARE(judgeReplicas(tolerances, {full, wrong}).decision, Decision::NeedNodeReference);
        // The node's replica (every output) decides against one without the witnesses.
        Replica node = replica("", "node-reference", y);
        node.outputs.push_back(witness);
        const auto decided = judgeReplicas(tolerances, {wrong, node});
        QCOMPARE(decided.decision, Decision::Decided);
        QCOMPARE(decided.decisive, std::size_t{1});
        QVERIFY(!decided.verdicts[0].accepted);
        QVERIFY(judgeReplicas(tolerances, {without, node}).verdicts[0].accepted);
    }
};

QTEST_APPLESS_MAIN(TestReplicaReferee)
#include "test_replica_referee.moc"
