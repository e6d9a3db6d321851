// Tests of the Scheduler with fake peers and a fake job kind on an in-memory database: slots,
// round-robin, durable leases before frames leave, lease expiry on an injected clock, re-lease
// with a new attempt, stale and duplicate results (which free nothing), task errors, a volunteer
// that leaves, withdrawn leases.
#include <QtTest/QtTest>

#include "fake_kind.hpp"
#include "lease_store.hpp"
#include "node_harness.hpp"
#include "scheduler.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

struct Rig : RoleRig {
    VerdictPath verdicts{context, peers};
    Scheduler scheduler{context, peers, verdicts, SchedulerSettings{60.0}};
    FakeKind kind;

    Rig() { scheduler.addKind(kind); }

    std::shared_ptr<FakePeerLink> volunteer(std::uint64_t id, int slots) {
        auto link = std::make_shared<FakePeerLink>();
        Peer& peer = peers.add(id, link, PeerRole::Volunteer);
        peer.ready = true;
        peer.volunteer.volunteerId = "v-" + std::to_string(id);
        peer.volunteer.slots = slots;
        return link;
    }
    net::Message result(std::int64_t task, std::int64_t attempt) {
        return control({{"type", "result"}, {"op", "fake"}, {"task", task}, {"attempt", attempt}});
    }
};

std::int64_t attemptOf(const net::Message& task) {
    return task.control.at("attempt").as_int64();
}
std::int64_t taskOf(const net::Message& task) {
    return task.control.at("task").as_int64();
}

} // namespace

class TestScheduler : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void leasesFillSlotsRoundRobin();
    void leasesAreDurableBeforeFramesLeave();
    void expiryReleasesWithANewAttempt();
    void staleAndDuplicateResultsFreeNothing();
    void taskErrorEndsTheLease();
    void volunteerLeavingEndsItsLeases();
    void withdrawnLeasesMakeResultsStale();
    void heavyFramesAreBuiltOnWorkers();
    void malformedResultClosesThePeer();
};

void TestScheduler::leasesFillSlotsRoundRobin() {
    Rig rig;
    auto one = rig.volunteer(1, 2);
    auto two = rig.volunteer(2, 1);
    rig.kind.queue = {10, 11, 12, 13, 14};
    rig.scheduler.pump();
    QCOMPARE(one->count("task"), std::size_t{2});
    QCOMPARE(two->count("task"), std::size_t{1});
    QCOMPARE(taskOf(one->sentOfType("task")[0]), std::int64_t{10});
    QCOMPARE(taskOf(two->sentOfType("task")[0]), std::int64_t{11}); // one each per pass
    QCOMPARE(rig.scheduler.leasesHeldBy(1), 2);
    QCOMPARE(rig.scheduler.leasesHeldBy(2), 1);
    QCOMPARE(rig.kind.queue.size(), std::size_t{2}); // nobody has a free slot
    rig.scheduler.pump();
    QCOMPARE(one->count("task") + two->count("task"), std::size_t{3});
}

void TestScheduler::leasesAreDurableBeforeFramesLeave() {
    Rig rig;
    auto one = rig.volunteer(1, 1);
    rig.kind.queue = {10};
    rig.scheduler.pump();
    QCOMPARE(one->count("task"), std::size_t{1});
    QCOMPARE(queryInt(rig.node.store, "SELECT count(*) FROM task_leases WHERE kind = 'fake' AND "
                                      "task_id = 10 AND attempt = 1 AND volunteer_id = 'v-1'"),
             std::int64_t{1});
    QCOMPARE(queryInt(rig.node.store, "SELECT CAST(deadline AS INTEGER) FROM task_leases"),
             std::int64_t{1060});
    // A recorded attempt is never leased again: the lease fails, nothing is sent, the task stays.
    rig.kind.attempts[11] = 0;
    QVERIFY(recordLease(rig.node.store.database(), LeaseRecord{"fake", 11, 1, "v-9", 0, 0})
                .has_value());
    auto two = rig.volunteer(2, 1);
    rig.kind.queue = {11};
    rig.scheduler.pump();
    QCOMPARE(two->count("task"), std::size_t{0});
    QCOMPARE(rig.kind.lost.size(), std::size_t{1});
    QCOMPARE(rig.kind.lost[0].why, LeaseLoss::NotSent);
    QCOMPARE(rig.scheduler.leasesHeldBy(2), 0);
}

void TestScheduler::expiryReleasesWithANewAttempt() {
    Rig rig;
    auto one = rig.volunteer(1, 1);
    rig.kind.queue = {10};
    rig.scheduler.pump();
    rig.node.now = 1059.9;
    rig.scheduler.expireLeases();
    QVERIFY(rig.kind.lost.empty());
    rig.node.now = 1060.0;
    rig.scheduler.expireLeases(); // expires, the kind re-queues, the pump leases it again
    QCOMPARE(rig.kind.lost.size(), std::size_t{1});
    QCOMPARE(rig.kind.lost[0].why, LeaseLoss::Expired);
    QCOMPARE(one->count("task"), std::size_t{2});
    QCOMPARE(attemptOf(one->sentOfType("task")[1]), std::int64_t{2});
    // The late result of the expired attempt is stale; the current one is accepted.
    rig.scheduler.onResult(1, rig.result(10, 1));
    QCOMPARE(one->count("verdict"), std::size_t{1});
    QCOMPARE(one->sentOfType("verdict")[0].control.at("verdict").as_string(), "stale");
    QVERIFY(rig.kind.results.empty());
    rig.scheduler.onResult(1, rig.result(10, 2));
    QCOMPARE(rig.kind.results.size(), std::size_t{1});
    QCOMPARE(rig.kind.results[0].attempt, std::int64_t{2});
}

void TestScheduler::staleAndDuplicateResultsFreeNothing() {
    Rig rig;
    auto one = rig.volunteer(1, 1);
    rig.kind.queue = {10, 11};
    rig.scheduler.pump();
    QCOMPARE(rig.scheduler.leasesHeldBy(1), 1);
    // A result for an attempt it never held (attempt + 1) does not free its slot.
    rig.scheduler.onResult(1, rig.result(10, 2));
    rig.scheduler.pump();
    QCOMPARE(rig.scheduler.leasesHeldBy(1), 1);
    QCOMPARE(one->count("task"), std::size_t{1});
    // Another volunteer cannot answer its lease either.
    auto two = rig.volunteer(2, 0);
    rig.scheduler.onResult(2, rig.result(10, 1));
    QCOMPARE(two->sentOfType("verdict")[0].control.at("verdict").as_string(), "stale");
    QVERIFY(rig.kind.results.empty());
    // The real result ends the lease once; a replay of it is stale.
    rig.scheduler.onResult(1, rig.result(10, 1));
    rig.scheduler.onResult(1, rig.result(10, 1));
    QCOMPARE(rig.kind.results.size(), std::size_t{1});
    QCOMPARE(one->count("verdict"), std::size_t{2}); // two stale
    rig.node.poll();                                 // the wake-up pump
    QCOMPARE(one->count("task"), std::size_t{2});
}

void TestScheduler::taskErrorEndsTheLease() {
    Rig rig;
    auto one = rig.volunteer(1, 1);
    rig.kind.queue = {10};
    rig.scheduler.pump();
    rig.scheduler.onTaskError(1, boost::json::object{{"type", "task_error"},
                                                     {"op", "fake"},
                                                     {"task", 10},
                                                     {"attempt", 7},
                                                     {"message", "no"}});
    QVERIFY2(rig.kind.lost.empty(), "a task error for another attempt ended the lease");
    rig.scheduler.onTaskError(1, boost::json::object{{"type", "task_error"},
                                                     {"op", "fake"},
                                                     {"task", 10},
                                                     {"attempt", 1},
                                                     {"message", "out of memory"}});
    QCOMPARE(rig.kind.lost.size(), std::size_t{1});
    QCOMPARE(rig.kind.lost[0].why, LeaseLoss::TaskError);
    QCOMPARE(rig.kind.lost[0].detail, std::string("out of memory"));
    QCOMPARE(rig.scheduler.leasesHeldBy(1), 0);
}

void TestScheduler::volunteerLeavingEndsItsLeases() {
    Rig rig;
    rig.volunteer(1, 3);
    rig.kind.queue = {10, 11, 12};
    rig.scheduler.pump();
    QCOMPARE(rig.scheduler.leasesHeldBy(1), 3);
    const Peer gone = *rig.peers.find(1);
    rig.peers.remove(1);
    rig.scheduler.onPeerClosed(gone, Error{ErrorCode::Timeout, "idle"});
    QCOMPARE(rig.kind.lost.size(), std::size_t{3});
    for (const auto& loss : rig.kind.lost)
        QCOMPARE(loss.why, LeaseLoss::Disconnected);
    QCOMPARE(rig.scheduler.leasesHeldBy(1), 0);
    QVERIFY(rig.node.logged("volunteer v-1 disconnected"));
    QVERIFY(rig.node.logged("3 task(s) back in the queue"));
}

void TestScheduler::withdrawnLeasesMakeResultsStale() {
    Rig rig;
    auto one = rig.volunteer(1, 1);
    rig.kind.queue = {10};
    rig.scheduler.pump();
    rig.scheduler.withdraw("fake", 10);
    QCOMPARE(rig.scheduler.leasesHeldBy(1), 0);
    QVERIFY2(rig.kind.lost.empty(), "the kind withdrew it: it is not told again");
    rig.scheduler.onResult(1, rig.result(10, 1));
    QVERIFY(rig.kind.results.empty());
    QCOMPARE(one->sentOfType("verdict")[0].control.at("verdict").as_string(), "stale");
}

void TestScheduler::heavyFramesAreBuiltOnWorkers() {
    Rig rig;
    rig.kind.heavyFrames = true;
    auto one = rig.volunteer(1, 2);
    rig.kind.queue = {10, 11};
    rig.scheduler.pump();
    QCOMPARE(rig.scheduler.leasesHeldBy(1), 2); // leased at once, sent when built
    QVERIFY(rig.node.waitUntil([&] { return one->count("task") == 2; }));
}

void TestScheduler::malformedResultClosesThePeer() {
    Rig rig;
    auto one = rig.volunteer(1, 1);
    rig.scheduler.onResult(1, control({{"type", "result"}, {"op", "fake"}, {"task", 10}}));
    QVERIFY(one->closed().has_value());
    QCOMPARE(one->closed()->code, ErrorCode::InvalidMessage);
}

QTEST_APPLESS_MAIN(TestScheduler)
#include "test_scheduler.moc"
