// The compute gate: "finish the current task, then pause" holds only new tasks; a pause parks
// between slices; wake() lets a waiter drop a task that went stale; shutdown releases everyone.
#include <QtTest>

#include <atomic>
#include <future>

#include "compute_gate.hpp"

using namespace goblin::volunteer;
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
    QCOMPARE(start.wait_for(100ms), std::future_status::timeout);
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
    ComputeGate gate;
    gate.setPlan({.dutyPercent = 20});
    // 20 % duty after 10 s of work: a 40 s rest, which a pause cuts short.
    auto resting = std::async(std::launch::async, [&] { gate.rest(std::chrono::seconds(10)); });
    QCOMPARE(resting.wait_for(100ms), std::future_status::timeout);
    gate.setPlan({.run = false});
    QCOMPARE(resting.wait_for(5s), std::future_status::ready);
}

QTEST_APPLESS_MAIN(TestComputeGate)
#include "test_compute_gate.moc"
