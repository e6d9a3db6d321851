// The compute gate: "finish the current task, then pause" holds only new tasks; a pause parks
// between slices; wake() lets a waiter drop a task that went stale; shutdown releases everyone;
// the duty rest is timed on a fake clock (no test here waits for wall time to pass).
#include <QtTest>

#include <atomic>
#include <future>

#include "compute_gate.hpp"
#include "fake_gate_clock.hpp"

using namespace goblin::volunteer;
using goblin::volunteer::testing::FakeGateClock;
using namespace std::chrono_literals;

class TestComputeGate : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void runningPlanPassesAtOnce();
    void holdNewTasksBlocksOnlyTaskStarts();
    void staleTaskIsDroppedOnWake();
    void shutdownReleasesWaiters();
    void restFollowsTheDuty();
};

void TestComputeGate::runningPlanPassesAtOnce() {
    ComputeGate gate;
    QCOMPARE(gate.enterTask(), GateVerdict::Go);
    QCOMPARE(gate.betweenSlices(0s), GateVerdict::Go);
    QVERIFY(!gate.parked());
}

void TestComputeGate::holdNewTasksBlocksOnlyTaskStarts() {
    ComputeGate gate;
    gate.setPlan({.run = true, .holdNewTasks = true});
    // A task already running keeps going between its slices…
    QCOMPARE(gate.betweenSlices(0s), GateVerdict::Go);
    // …but no new task starts until the hold is lifted.
    auto start = std::async(std::launch::async, [&] { return gate.enterTask(); });
    QTRY_VERIFY(gate.parked());
    gate.wake(); // a re-check while held keeps it waiting
    QVERIFY(gate.parked());
    QCOMPARE(start.wait_for(0s), std::future_status::timeout);
    gate.setPlan({});
    QCOMPARE(start.get(), GateVerdict::Go);
}

void TestComputeGate::staleTaskIsDroppedOnWake() {
    ComputeGate gate;
    gate.setPlan({.run = false});
    std::atomic<bool> stale{false};
    auto waiting = std::async(std::launch::async,
                              [&] { return gate.waitWhilePaused([&] { return stale.load(); }); });
    QTRY_VERIFY(gate.parked());
    stale = true;
    gate.wake();
    QCOMPARE(waiting.get(), GateVerdict::Abandon);
    QVERIFY(!gate.parked());
}

void TestComputeGate::shutdownReleasesWaiters() {
    ComputeGate gate;
    gate.setPlan({.run = false});
    auto start = std::async(std::launch::async, [&] { return gate.enterTask(); });
    QTRY_VERIFY(gate.parked());
    gate.shutdown();
    QCOMPARE(start.get(), GateVerdict::Shutdown);
    QCOMPARE(gate.betweenSlices(0s), GateVerdict::Shutdown);
}

void TestComputeGate::restFollowsTheDuty() {
    FakeGateClock clock;
    ComputeGate gate(clock);
    clock.onAdvance([&] { gate.wake(); });
    gate.setPlan({.dutyPercent = 20});
    const auto start = clock.now();
    // 20 % duty after 10 s of work: a 40 s rest…
    auto resting = std::async(std::launch::async, [&] { gate.rest(10s); });
    clock.awaitSleep(1);
    QCOMPARE(clock.sleeps().at(0), FakeGateClock::Duration(40s));
    clock.advance(39s);
    QVERIFY(!clock.awaitCheckAt(start + 39s)); // still resting at 39 s
    QCOMPARE(resting.wait_for(0s), std::future_status::timeout);
    clock.advance(1s);
    QVERIFY(clock.awaitCheckAt(start + 40s)); // over at 40 s
    resting.get();
    // …which a pause cuts short: no time passes on the clock.
    auto cut = std::async(std::launch::async, [&] { gate.rest(10s); });
    clock.awaitSleep(2);
    gate.setPlan({.run = false, .dutyPercent = 20});
    cut.get();
    QCOMPARE(clock.now(), start + 40s);
    // At full duty there is no rest at all.
    gate.setPlan({});
    gate.rest(10s);
    QCOMPARE(clock.sleeps().size(), std::size_t{2});
}

QTEST_APPLESS_MAIN(TestComputeGate)
#include "test_compute_gate.moc"
