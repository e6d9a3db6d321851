// Tests of "Witnesses from one replica" (docs/protocol.md, protocol 10) through the Coordinator
// with fake peers on a real SQLite file: of a replicated task's two leases to volunteers of
// protocol 10, one carries the witnesses and the other says omit_witnesses; answers without them
// decide the job to the reference's bits, each task audited cheaply on the witnesses the other
// replica carried; a result without the witnesses for a lease that did not say so fails the gate
// and quarantines its volunteer; older volunteers are never told to omit; and when the lease
// that was to carry them is lost, the next one carries them.
#include <QtTest/QtTest>

#include <map>

#include "labnode/fake_answers.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

constexpr int kOmitProtocol = 10;

CoordinatorSettings cheapAuditsOnly() {
    CoordinatorSettings chosen; // default trust: new identities are audited on every task
    chosen.trust.fullAuditShare = 0.0;
    return chosen;
}

std::int64_t omitted(const net::Message& task) {
    const auto* field = task.control.if_contains("omit_witnesses");
    return field ? field->as_int64() : 0;
}

// The task's graph run by the reference, less the witnesses the frame says to omit.
net::Message asAsked(const net::Message& task) {
    std::vector<core::Tensor> outputs = runTaskGraph(task);
    outputs.resize(outputs.size() - static_cast<std::size_t>(omitted(task)));
    return answerWith(task, std::move(outputs));
}

// relu(x·w) for the job's inputs, by the reference.
core::Tensor expectedRelu(const core::Tensor& x, const core::Tensor& w) {
    return relu(
        reference::runOp(core::ops::OpCode::Matmul, std::vector<core::Tensor>{x, w}, {}).value());
}

bool deliveredBits(const FakePeerLink& researcher, const core::Tensor& expected) {
    const auto done = researcher.sentOfType("job_done");
    if (done.size() != 1 || done[0].tensors.size() != 1)
        return false;
    const auto got = done[0].tensors[0]->values<float>();
    return std::equal(got.begin(), got.end(), expected.values<float>().begin(),
                      expected.values<float>().end());
}

// A node with default trust (every task audited, cheaply), a researcher and two canonical
// volunteers on two addresses whose hello says `protocol`.
struct TwoVolunteers {
    explicit TwoVolunteers(int protocol)
        : one(cluster.connectVolunteer(2, true, "cpu-reference", "10.0.0.1", 1 << 30, protocol)),
          two(cluster.connectVolunteer(2, true, "cpu-reference", "10.0.0.2", 1 << 30, protocol)) {}

    NodeHarness node;
    FakeCluster cluster{node, cheapAuditsOnly()};
    std::shared_ptr<FakePeerLink> researcher = cluster.connectResearcher();
    FakeVolunteer& one;
    FakeVolunteer& two;

    // What a job of relu(x·w) drawn from `seed` gave when both volunteers answered every task
    // as asked: whether it was delivered with the reference's bits, and the omit_witnesses of
    // each task's leases.
    struct Run {
        bool exact = false;
        std::map<std::int64_t, std::vector<std::int64_t>> omits;
    };
    Run runAsAsked(std::uint64_t seed) {
        const auto [x, w] = mlpInputs(seed);
        cluster.fromResearcher(submitMatmulRelu(x, w));
        Run run;
        const auto record = [&](const net::Message& task) {
            run.omits[task.control.at("task").as_int64()].push_back(omitted(task));
            return asAsked(task);
        };
        const bool done = node.waitUntil([&] {
            cluster.answer(one, record);
            cluster.answer(two, record);
            return researcher->count("job_done") == 1;
        });
        run.exact = done && deliveredBits(*researcher, expectedRelu(x, w));
        return run;
    }
};

} // namespace

class TestWitnessLeases : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void oneReplicaOfEachTaskCarriesTheWitnesses() {
        TwoVolunteers lab(kOmitProtocol);
        auto run = lab.runAsAsked(31);
        QVERIFY(run.exact);
        // Two tasks, each leased twice: one lease with the witness (the matmul), one without.
        QCOMPARE(run.omits.size(), std::size_t{2});
        for (auto& [task, omits] : run.omits) {
            std::sort(omits.begin(), omits.end());
            QCOMPARE(omits, (std::vector<std::int64_t>{0, 1}));
        }
        // Every task audited cheaply, on the witness one replica carried; both accepted.
        QCOMPARE(queryInt(lab.node.store, "SELECT count(*) FROM graph_results WHERE method = "
                                          "'node-audit' AND verdict = 'accepted' AND reason LIKE "
                                          "'cheap audit:%'"),
                 std::int64_t{4});
        QCOMPARE(queryInt(lab.node.store, "SELECT count(*) FROM graph_results WHERE method = "
                                          "'node-reference'"),
                 std::int64_t{0});
    }

    void leavingTheWitnessesOutUnaskedFailsTheGate() {
        TwoVolunteers lab(kOmitProtocol);
        auto& [node, cluster, researcher, one, two] = lab;
        const std::string cutter = one.id();
        const auto [x, w] = mlpInputs(32);
        cluster.fromResearcher(submitMatmulRelu(x, w));
        // `one` drops the witness whatever its frame says; `two` answers as asked.
        const auto withoutWitness = [](const net::Message& task) {
            std::vector<core::Tensor> outputs = runTaskGraph(task);
            outputs.resize(1);
            return answerWith(task, std::move(outputs));
        };
        QVERIFY(node.waitUntil([&] {
            if (cluster.volunteers.contains(one.peer))
                cluster.answer(one, withoutWitness);
            cluster.answer(two, asAsked);
            if (quarantined(node, cutter))
                return true;
            return false;
        }));
        QVERIFY(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE method = "
                                     "'shape-gate' AND verdict = 'rejected' AND volunteer_id = '" +
                                         cutter + "'") >= 1);
    }

    void olderVolunteersAreNeverToldToOmit() {
        TwoVolunteers lab(kOmitProtocol - 1);
        const auto run = lab.runAsAsked(33);
        QVERIFY(run.exact);
        for (const auto& [task, omits] : run.omits)
            QCOMPARE(omits, (std::vector<std::int64_t>{0, 0}));
        QCOMPARE(run.omits.size(), std::size_t{2});
    }

    void aLostCarrierIsReplacedByALeaseWithTheWitnesses() {
        TwoVolunteers lab(kOmitProtocol);
        auto& [node, cluster, researcher, one, two] = lab;
        const auto [x, w] = mlpInputs(34);
        cluster.fromResearcher(submitMatmulRelu(x, w));
        QVERIFY(node.waitUntil([&] { return one.unanswered().size() == 2; }));
        QVERIFY(node.waitUntil([&] { return two.unanswered().size() == 2; }));
        // The volunteer that was to carry a task's witness leaves without answering; the other
        // answers as asked (without that witness). The third volunteer's lease of that task
        // must carry it, or the node would have no witness to audit.
        std::map<std::int64_t, std::uint64_t> carrierOf;
        for (const auto* volunteer : {&one, &two})
            for (const net::Message& task : volunteer->unanswered())
                if (omitted(task) == 0)
                    carrierOf[task.control.at("task").as_int64()] = volunteer->peer;
        QCOMPARE(carrierOf.size(), std::size_t{2});
        const std::uint64_t leaving = carrierOf.begin()->second;
        auto& staying = leaving == one.peer ? two : one;
        cluster.disconnect(leaving);
        cluster.answer(staying, asAsked);
        auto& third =
            cluster.connectVolunteer(2, true, "cpu-reference", "10.0.0.3", 1 << 30, kOmitProtocol);
        std::vector<std::int64_t> thirdOmits;
        QVERIFY(node.waitUntil([&] {
            for (const net::Message& task : third.unanswered())
                thirdOmits.push_back(omitted(task));
            cluster.answer(third, asAsked);
            cluster.answer(staying, asAsked);
            return researcher->count("job_done") == 1;
        }));
        QVERIFY(deliveredBits(*researcher, expectedRelu(x, w)));
        QVERIFY(!thirdOmits.empty());
        QCOMPARE(thirdOmits.front(), std::int64_t{0});
        QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE verdict = "
                                      "'rejected'"),
                 std::int64_t{0});
    }
};

QTEST_APPLESS_MAIN(TestWitnessLeases)
#include "test_witness_leases.moc"
