// Tests of the Scheduler with fake peers and a fake job kind on an in-memory database: slots,
// round-robin, durable leases before frames leave, lease expiry on an injected clock, re-lease
// with a new attempt, stale, foreign and duplicate results (which free nothing), task errors, a
// volunteer that leaves, withdrawn leases; and the rules that make leases ungameable: a lost task
// never goes back to its volunteer (not after a reconnect, not after a restart), expiries halve a
// volunteer's slots and answers grow them back, every loss reaches the observer, and a task that
// expired N times or that every connected volunteer lost is computed by the node.
#include <QtTest/QtTest>

#include "labnode/fake_kind.hpp"
#include "labnode/node_harness.hpp"
#include "store/lease_store.hpp"
#include "work/scheduler.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

struct Rig {
    NodeHarness node;
    NodeContext context = node.context();
    PeerRegistry peers;
    VerdictPath verdicts{context, peers};
    Scheduler scheduler;
    FakeKind kind;

    explicit Rig(const std::string& db = ":memory:", SchedulerSettings settings = {60.0, 3})
        : node(db), scheduler(context, peers, verdicts, settings) {
        scheduler.addKind(kind);
    }

    std::shared_ptr<FakePeerLink> volunteer(std::uint64_t id, int slots) {
        return volunteerAs(id, "v-" + std::to_string(id), slots);
    }
    // A connection of the volunteer `volunteerId` (a reconnect when it had another before).
    std::shared_ptr<FakePeerLink> volunteerAs(std::uint64_t id, const std::string& volunteerId,
                                              int slots) {
        auto link = std::make_shared<FakePeerLink>();
        Peer& peer = peers.add(id, link, PeerRole::Volunteer);
        peer.ready = true;
        peer.volunteer.volunteerId = volunteerId;
        peer.volunteer.slots = slots;
        return link;
    }
    // The volunteer hangs up; `held` seconds after it took its leases (0: at once, a hand-back).
    void disconnect(std::uint64_t id, double held = 0) {
        node.now += held;
        const Peer gone = *peers.find(id);
        peers.remove(id);
        scheduler.onPeerClosed(gone, Error{ErrorCode::Timeout, "gone"});
    }
    // Moves the clock past every deadline and expires.
    void expireAll() {
        node.now += 60.0;
        scheduler.expireLeases();
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
    void expiredTaskNeverReturnsToItsVolunteer();
    void lostTasksStayBarredAfterARestart();
    void expiriesHalveSlotsAndAnswersGrowThemBack();
    void everyLostLeaseReachesTheObserver();
    void taskThatExpiresNTimesIsComputedOnNode();
    void taskEveryVolunteerLostIsComputedOnNode();
    void quickHandBackIsNotALoss();
    void taskHandedBackNTimesIsComputedOnNode();
    void foreignResultsNeverFreeASlot();
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
    auto two = rig.volunteer(2, 1);
    rig.kind.queue = {10};
    rig.scheduler.pump();
    QCOMPARE(one->count("task"), std::size_t{1});
    rig.node.now = 1059.9;
    rig.scheduler.expireLeases();
    QVERIFY(rig.kind.lost.empty());
    rig.node.now = 1060.0;
    rig.scheduler.expireLeases(); // expires, the kind re-queues, the pump leases it again
    QCOMPARE(rig.kind.lost.size(), std::size_t{1});
    QCOMPARE(rig.kind.lost[0].why, LeaseLoss::Expired);
    // Not to the volunteer that let it expire: to the other, with a new attempt.
    QCOMPARE(one->count("task"), std::size_t{1});
    QCOMPARE(two->count("task"), std::size_t{1});
    QCOMPARE(attemptOf(two->sentOfType("task")[0]), std::int64_t{2});
    // The late result of the expired attempt is stale; the current one is accepted.
    rig.scheduler.onResult(1, rig.result(10, 1));
    QCOMPARE(one->count("verdict"), std::size_t{1});
    QCOMPARE(one->sentOfType("verdict")[0].control.at("verdict").as_string(), "stale");
    QVERIFY(rig.kind.results.empty());
    rig.scheduler.onResult(2, rig.result(10, 2));
    QCOMPARE(rig.kind.results.size(), std::size_t{1});
    QCOMPARE(rig.kind.results[0].attempt, std::int64_t{2});
    QVERIFY(rig.kind.computedOnNode.empty());
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

void TestScheduler::expiredTaskNeverReturnsToItsVolunteer() {
    Rig rig;
    auto one = rig.volunteer(1, 2);
    auto busy = rig.volunteer(2, 0); // connected, may take the task, no free slot yet
    rig.kind.queue = {10};
    rig.scheduler.pump();
    QCOMPARE(one->count("task"), std::size_t{1});
    rig.expireAll();
    QCOMPARE(rig.kind.lost.size(), std::size_t{1});
    QCOMPARE(one->count("task"), std::size_t{1}); // its other slot is free: still not task 10
    QCOMPARE(rig.kind.queue, std::deque<std::int64_t>{10});
    // Reconnecting under the same volunteer id changes nothing.
    rig.disconnect(1);
    auto again = rig.volunteerAs(3, "v-1", 2);
    rig.kind.queue.push_back(11);
    rig.scheduler.pump();
    QCOMPARE(again->count("task"), std::size_t{1});
    QCOMPARE(taskOf(again->sentOfType("task")[0]), std::int64_t{11});
    QVERIFY(rig.scheduler.history().barred("fake", 10, "v-1"));
    QVERIFY(!rig.scheduler.history().barred("fake", 10, "v-2"));
    QVERIFY(!rig.scheduler.history().barred("other", 10, "v-1"));
    // The other volunteer gets it once it has a slot; the node was never needed.
    rig.peers.find(2)->volunteer.slots = 1;
    rig.scheduler.pump();
    QCOMPARE(busy->count("task"), std::size_t{1});
    QCOMPARE(taskOf(busy->sentOfType("task")[0]), std::int64_t{10});
    QVERIFY(rig.kind.computedOnNode.empty());
}

void TestScheduler::lostTasksStayBarredAfterARestart() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("node.db").toStdString();
    {
        Rig rig(db);
        rig.volunteer(1, 1);
        rig.volunteer(2, 0);
        rig.kind.queue = {10};
        rig.scheduler.pump();
        rig.expireAll(); // v-1 lost task 10
        rig.kind.attempts[11] = 5;
        rig.kind.queue.push_back(11);
        rig.scheduler.pump();
        rig.scheduler.onTaskError(1, boost::json::object{{"type", "task_error"},
                                                         {"op", "fake"},
                                                         {"task", 11},
                                                         {"attempt", 6},
                                                         {"message", "no"}});
        QCOMPARE(queryInt(rig.node.store, "SELECT count(*) FROM lease_losses WHERE volunteer_id = "
                                          "'v-1' AND kind = 'fake'"),
                 std::int64_t{2});
        QCOMPARE(
            queryInt(rig.node.store,
                     "SELECT count(*) FROM lease_losses WHERE why = 'expired' AND task_id = 10"),
            std::int64_t{1});
    }
    Rig rig(db);
    QVERIFY(rig.scheduler.history().barred("fake", 10, "v-1"));
    QVERIFY(rig.scheduler.history().barred("fake", 11, "v-1"));
    QCOMPARE(rig.scheduler.history().expiries("fake", 10), 1);
    QCOMPARE(rig.scheduler.history().expiries("fake", 11), 0); // a task error is no expiry
    auto one = rig.volunteer(1, 2);
    rig.volunteer(2, 0);
    rig.kind.queue = {10, 11, 12};
    rig.scheduler.pump();
    QCOMPARE(one->count("task"), std::size_t{1});
    QCOMPARE(taskOf(one->sentOfType("task")[0]), std::int64_t{12});
}

void TestScheduler::expiriesHalveSlotsAndAnswersGrowThemBack() {
    Rig rig;
    auto one = rig.volunteer(1, 4);
    rig.volunteer(2, 0);
    for (std::int64_t task = 10; task < 30; ++task)
        rig.kind.queue.push_back(task);
    rig.scheduler.pump();
    QCOMPARE(rig.scheduler.leasesHeldBy(1), 4);
    QCOMPARE(rig.scheduler.slotsOf(1), 4);
    rig.expireAll(); // four expiries: 4 → 2 → 1 → 1 → 1
    QCOMPARE(rig.scheduler.slotsOf(1), 1);
    QCOMPARE(rig.scheduler.leasesHeldBy(1), 1); // re-filled up to its one slot
    QCOMPARE(one->count("task"), std::size_t{5});
    // A reconnect does not reset it.
    rig.disconnect(1);
    auto again = rig.volunteerAs(3, "v-1", 4);
    QCOMPARE(rig.scheduler.slotsOf(3), 1);
    rig.scheduler.pump();
    QCOMPARE(rig.scheduler.leasesHeldBy(3), 1);
    // Each answer gives one slot back, up to what it advertises.
    std::size_t answered = 0;
    auto answerAll = [&] {
        const auto tasks = again->sentOfType("task");
        for (; answered < tasks.size(); ++answered)
            rig.scheduler.onResult(3,
                                   rig.result(taskOf(tasks[answered]), attemptOf(tasks[answered])));
        rig.scheduler.pump();
    };
    answerAll();
    QCOMPARE(rig.scheduler.slotsOf(3), 2);
    QCOMPARE(rig.scheduler.leasesHeldBy(3), 2);
    answerAll();
    QCOMPARE(rig.scheduler.slotsOf(3), 4);
    QCOMPARE(rig.scheduler.leasesHeldBy(3), 4);
    answerAll();
    QCOMPARE(rig.scheduler.slotsOf(3), 4); // never more than it advertised
    QCOMPARE(rig.scheduler.leasesHeldBy(3), 4);
    // Stale answers earn nothing.
    const auto expiring = again->sentOfType("task");
    rig.expireAll();
    QCOMPARE(rig.scheduler.slotsOf(3), 1);
    for (std::size_t i = expiring.size() - 4; i < expiring.size(); ++i)
        rig.scheduler.onResult(3, rig.result(taskOf(expiring[i]), attemptOf(expiring[i])));
    QCOMPARE(rig.scheduler.slotsOf(3), 1);
}

void TestScheduler::everyLostLeaseReachesTheObserver() {
    Rig rig;
    std::vector<std::pair<std::int64_t, LeaseLoss>> seen;
    rig.scheduler.setLeaseObserver(
        [&](const Lease& lease, LeaseLoss why) { seen.emplace_back(lease.task, why); });
    rig.volunteer(1, 3);
    rig.volunteer(2, 0);
    rig.kind.queue = {10, 11, 12};
    rig.scheduler.pump();
    rig.scheduler.onTaskError(1, boost::json::object{{"type", "task_error"},
                                                     {"op", "fake"},
                                                     {"task", 11},
                                                     {"attempt", 1},
                                                     {"message", "no"}});
    rig.scheduler.withdraw("fake", 12); // the kind's own decision: nobody's loss
    rig.expireAll();
    QCOMPARE(seen.size(), std::size_t{2});
    QCOMPARE(seen[0], (std::pair<std::int64_t, LeaseLoss>{11, LeaseLoss::TaskError}));
    QCOMPARE(seen[1], (std::pair<std::int64_t, LeaseLoss>{10, LeaseLoss::Expired}));
    rig.peers.find(2)->volunteer.slots = 1;
    rig.scheduler.pump(); // v-2 takes a task
    QCOMPARE(rig.scheduler.leasesHeldBy(2), 1);
    rig.disconnect(2, 40.0); // past half its 60 s lease: a loss, not a hand-back
    QCOMPARE(seen.size(), std::size_t{3});
    QCOMPARE(seen[2].second, LeaseLoss::Disconnected);
    // The kind heard of each loss first.
    QCOMPARE(rig.kind.lost.size(), std::size_t{3});
}

void TestScheduler::taskThatExpiresNTimesIsComputedOnNode() {
    Rig rig;
    std::vector<std::shared_ptr<FakePeerLink>> silent;
    for (std::uint64_t id = 1; id <= 5; ++id)
        silent.push_back(rig.volunteer(id, 1));
    rig.kind.queue = {10};
    for (int expiry = 1; expiry <= 3; ++expiry) {
        rig.scheduler.pump();
        QCOMPARE(rig.scheduler.leasesHeldBy(std::uint64_t(expiry)), 1);
        QVERIFY(rig.kind.computedOnNode.empty());
        rig.expireAll();
    }
    // Three expiries, by three volunteers: the node computes it though two never tried.
    QCOMPARE(rig.kind.computedOnNode, std::vector<std::int64_t>{10});
    QVERIFY(rig.kind.queue.empty());
    QCOMPARE(silent[3]->count("task") + silent[4]->count("task"), std::size_t{0});
    QVERIFY(rig.node.logged("fake task 10: its lease expired 3 time(s); the node computes it"));
    // Each volunteer got it once.
    for (std::size_t i = 0; i < 3; ++i)
        QCOMPARE(silent[i]->count("task"), std::size_t{1});
}

void TestScheduler::quickHandBackIsNotALoss() {
    // A paused desktop hands its lease back by hanging up at once: it may take the task again
    // when it returns; one that held it past half the lease period may not.
    Rig rig;
    rig.volunteer(1, 1);
    rig.kind.queue = {10};
    rig.scheduler.pump();
    rig.disconnect(1, 5.0);
    QVERIFY(rig.kind.computedOnNode.empty());
    auto back = rig.volunteerAs(2, "v-1", 1);
    rig.scheduler.pump();
    QCOMPARE(back->count("task"), std::size_t{1});
    rig.disconnect(2, 31.0);
    auto again = rig.volunteerAs(3, "v-1", 1);
    rig.scheduler.pump();
    QCOMPARE(again->count("task"), std::size_t{0});
    QCOMPARE(rig.kind.computedOnNode, std::vector<std::int64_t>{10});
}

void TestScheduler::taskHandedBackNTimesIsComputedOnNode() {
    // A volunteer that takes the task and hangs up at once, again and again (a task that crashes
    // it, a result the node cannot read, a vanisher): never barred, but after
    // maxTaskHandBacks hand-backs the node computes the task instead of offering it once more.
    Rig rig;
    rig.kind.queue = {10};
    const int most = SchedulerSettings{}.maxTaskHandBacks;
    for (int handBack = 1; handBack <= most; ++handBack) {
        auto link = rig.volunteerAs(std::uint64_t(handBack), "v-1", 1);
        rig.scheduler.pump();
        QCOMPARE(link->count("task"), std::size_t{1});
        QVERIFY(rig.kind.computedOnNode.empty());
        rig.disconnect(std::uint64_t(handBack));
    }
    QCOMPARE(rig.kind.computedOnNode, std::vector<std::int64_t>{10});
    QVERIFY(rig.node.logged("fake task 10: its volunteers hung up holding it 6 time(s); the node "
                            "computes it"));
    auto back = rig.volunteerAs(100, "v-1", 1);
    rig.scheduler.pump();
    QCOMPARE(back->count("task"), std::size_t{0});
    QCOMPARE(rig.kind.computedOnNode.size(), std::size_t{1});
}

void TestScheduler::taskEveryVolunteerLostIsComputedOnNode() {
    Rig rig;
    auto only = rig.volunteer(1, 1);
    rig.kind.queue = {10};
    rig.scheduler.pump();
    rig.expireAll();
    QCOMPARE(rig.kind.computedOnNode, std::vector<std::int64_t>{10});
    QVERIFY(rig.node.logged("fake task 10: no connected volunteer may take it again"));
    QCOMPARE(only->count("task"), std::size_t{1});
    // Left alone without volunteers, a lost task waits; when the only volunteer that comes back
    // is one that lost it, the pump hands it to the node.
    rig.kind.queue = {11};
    rig.scheduler.pump();
    rig.disconnect(1, 40.0);
    QCOMPARE(rig.kind.computedOnNode.size(), std::size_t{1});
    QCOMPARE(rig.kind.queue, std::deque<std::int64_t>{11});
    auto back = rig.volunteerAs(2, "v-1", 1);
    rig.scheduler.pump();
    QCOMPARE(rig.kind.computedOnNode, (std::vector<std::int64_t>{10, 11}));
    QCOMPARE(back->count("task"), std::size_t{0});
    // A task that expired N times before a restart goes to the node on the first pump.
    QTemporaryDir dir;
    const std::string db = dir.filePath("node.db").toStdString();
    {
        Rig before(db);
        for (std::int64_t attempt = 1; attempt <= 3; ++attempt)
            QVERIFY(
                recordLeaseLoss(before.node.store.database(),
                                LeaseLossRecord{"fake", 20, attempt, "v-" + std::to_string(attempt),
                                                LeaseLoss::Expired, 0})
                    .has_value());
    }
    Rig after(db);
    after.volunteer(7, 1);
    after.kind.queue = {20};
    after.scheduler.pump();
    QCOMPARE(after.kind.computedOnNode, std::vector<std::int64_t>{20});
    QCOMPARE(after.scheduler.leasesHeldBy(7), 0);
}

void TestScheduler::foreignResultsNeverFreeASlot() {
    Rig rig;
    auto one = rig.volunteer(1, 1);
    auto other = rig.volunteer(2, 0);
    rig.kind.queue = {10, 11, 12};
    rig.scheduler.pump();
    QCOMPARE(rig.scheduler.leasesHeldBy(1), 1);
    auto heldStill = [&] {
        rig.scheduler.pump();
        rig.node.poll();
        return rig.scheduler.leasesHeldBy(1) == 1 && one->count("task") == 1 &&
               rig.kind.results.empty();
    };
    // A task never leased, one that does not exist, the next attempt of its own lease.
    rig.scheduler.onResult(1, rig.result(11, 1));
    QVERIFY2(heldStill(), "a result for a task never leased freed a slot");
    rig.scheduler.onResult(1, rig.result(999, 1));
    QVERIFY2(heldStill(), "a result for an unknown task freed a slot");
    rig.scheduler.onResult(1, rig.result(10, 2));
    QVERIFY2(heldStill(), "a result for attempt + 1 freed a slot");
    rig.scheduler.onResult(1, rig.result(10, 0));
    QVERIFY2(heldStill(), "a result for attempt - 1 freed a slot");
    // Another connection, and the same volunteer id on a second connection.
    rig.scheduler.onResult(2, rig.result(10, 1));
    QVERIFY2(heldStill(), "another volunteer's result freed the slot");
    auto twin = rig.volunteerAs(3, "v-1", 0);
    rig.scheduler.onResult(3, rig.result(10, 1));
    QVERIFY2(heldStill(), "a second connection of the volunteer answered its lease");
    QCOMPARE(one->count("verdict") + other->count("verdict") + twin->count("verdict"),
             std::size_t{6});
    // The real answer frees it once; the duplicate (after the kind's verdict) frees nothing.
    rig.scheduler.onResult(1, rig.result(10, 1));
    rig.scheduler.pump();
    QCOMPARE(rig.kind.results.size(), std::size_t{1});
    QCOMPARE(one->count("task"), std::size_t{2});
    rig.scheduler.onResult(1, rig.result(10, 1));
    rig.scheduler.pump();
    QCOMPARE(rig.kind.results.size(), std::size_t{1});
    QCOMPARE(rig.scheduler.leasesHeldBy(1), 1);
    QCOMPARE(one->count("task"), std::size_t{2});
    // A result for a lease the kind withdrew (its task decided) is stale too.
    const std::int64_t current = taskOf(one->sentOfType("task")[1]);
    rig.scheduler.withdraw("fake", current);
    rig.scheduler.onResult(1, rig.result(current, 1));
    QCOMPARE(rig.kind.results.size(), std::size_t{1});
    for (const auto& verdict : one->sentOfType("verdict"))
        QCOMPARE(verdict.control.at("verdict").as_string(), "stale");
}

QTEST_APPLESS_MAIN(TestScheduler)
#include "test_scheduler.moc"
