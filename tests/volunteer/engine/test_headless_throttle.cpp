// The headless volunteer's throttle on an io_context with an injected host sampler and clock: the
// plan it hands the engine follows --cpu-percent and --idle-only, changes only when the decision
// does, and — fed into a ComputeGate on a fake clock — rests t·(100−N)/N after t seconds of work.
#include <QtTest>

#include <future>
#include <thread>
#include <vector>

#include <boost/asio/post.hpp>

#include "fake_gate_clock.hpp"
#include "headless_throttle.hpp"

using namespace goblin::volunteer;
using namespace std::chrono_literals;

class TestHeadlessThrottle : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void planFollowsTheCpuPercent();
    void idleOnlyWaitsForTheUser();
    void dutyCycleRestsInProportion();
    void describesTheDecision();
    void stopEndsTheTicksEvenWithOneDue();
};

namespace {

struct Rig {
    boost::asio::io_context io;
    HostState host;
    double steady = 0;
    int samples = 0;
    std::vector<ComputePlan> plans;
    std::vector<std::string> lines;
    HeadlessThrottle throttle;

    explicit Rig(const ThrottleSettings& settings)
        : throttle(
              io, settings,
              [this] {
                  ++samples;
                  return host;
              },
              [this] {
                  return ThrottleNow{steady, 0, 600};
              },
              [this](const ComputePlan& plan) { plans.push_back(plan); },
              [this](const std::string& line) { lines.push_back(line); }, 1ms) {
        host.hardwareThreads = 4;
        host.idleSeconds = 0;
    }
    // Runs ticks until `count` plans arrived (or a generous number of ticks passed).
    void awaitPlans(std::size_t count) {
        for (int i = 0; i < 2000 && plans.size() < count; ++i) {
            io.restart();
            io.run_for(5ms);
        }
    }
};

} // namespace

void TestHeadlessThrottle::planFollowsTheCpuPercent() {
    ThrottleSettings settings;
    settings.cpuCores = 2;
    settings.cpuLimitPercent = 50;
    Rig rig(settings);
    rig.throttle.start(); // the first decision is handed over at once
    QCOMPARE(rig.plans.size(), std::size_t(1));
    QCOMPARE(rig.plans[0], (ComputePlan{true, false, 2, 50}));
    for (int i = 0; i < 20; ++i) { // ticks with nothing changed hand over nothing
        rig.io.restart();
        rig.io.run_for(2ms);
    }
    QCOMPARE(rig.plans.size(), std::size_t(1));
    QCOMPARE(rig.lines.front(), std::string("throttle: computing (2 thread(s), 50 % CPU time)"));
    rig.throttle.stop();
}

void TestHeadlessThrottle::idleOnlyWaitsForTheUser() {
    ThrottleSettings settings;
    settings.idleMinutes = 5;
    Rig rig(settings);
    rig.host.idleSeconds = 10; // typing a moment ago
    rig.throttle.start();
    QCOMPARE(rig.plans.size(), std::size_t(1));
    QVERIFY(!rig.plans[0].run);
    QCOMPARE(rig.throttle.decision().reason, ThrottleReason::NotIdle);
    rig.host.idleSeconds = 301; // five minutes without input
    rig.steady = 301;
    rig.awaitPlans(2);
    QCOMPARE(rig.plans.size(), std::size_t(2));
    QVERIFY(rig.plans[1].run);
    QCOMPARE(rig.plans[1].threads, 4);   // every core when none is set
    rig.host.idleSeconds = std::nullopt; // no probe answers: "only when idle" cannot be kept
    rig.awaitPlans(3);
    QCOMPARE(rig.plans.size(), std::size_t(3));
    QVERIFY(!rig.plans[2].run);
    QCOMPARE(rig.throttle.decision().reason, ThrottleReason::IdleUnknown);
    rig.throttle.stop();
}

void TestHeadlessThrottle::dutyCycleRestsInProportion() {
    for (int percent : {50, 25, 100}) {
        ThrottleSettings settings;
        settings.cpuLimitPercent = percent;
        testing::FakeGateClock clock;
        ComputeGate gate(clock);
        clock.onAdvance([&] { gate.wake(); });
        boost::asio::io_context io;
        HeadlessThrottle throttle(
            io, settings, [] { return HostState{0.0, false, {}, 0, 0, 2}; },
            [] { return ThrottleNow{}; }, [&](const ComputePlan& plan) { gate.setPlan(plan); },
            [](const std::string&) {});
        throttle.start();
        QCOMPARE(gate.plan().dutyPercent, percent);
        // After computing for t = 2 s the compute thread rests t·(100−N)/N.
        auto resting = std::async(std::launch::async, [&] { gate.rest(2s); });
        if (percent < 100) {
            clock.awaitSleep(1);
            clock.advance(1h);
        }
        resting.get();
        const auto sleeps = clock.sleeps();
        if (percent == 100) {
            QVERIFY(sleeps.empty());
            continue;
        }
        QCOMPARE(sleeps.size(), std::size_t(1));
        const double rested = std::chrono::duration<double>(sleeps[0]).count();
        QCOMPARE(rested, 2.0 * (100 - percent) / percent);
    }
}

void TestHeadlessThrottle::describesTheDecision() {
    ThrottleDecision decision;
    decision.run = false;
    decision.reason = ThrottleReason::NotIdle;
    QCOMPARE(describeDecision(decision), std::string("waiting: you are using the computer"));
    decision = ThrottleDecision{true, ThrottleReason::None, 1, 30, {}};
    QCOMPARE(describeDecision(decision), std::string("computing (1 thread(s), 30 % CPU time)"));
}

// The headless volunteer stops its throttle when the node refuses it, and exits once its
// io_context runs out of work: a tick whose wait had already ended when stop() came (its handler
// queued, so cancel() cannot reach it) must not schedule another, or the volunteer runs on.
void TestHeadlessThrottle::stopEndsTheTicksEvenWithOneDue() {
    Rig rig(ThrottleSettings{});
    rig.throttle.start();
    const int before = rig.samples;
    std::this_thread::sleep_for(20ms); // the 1 ms tick is due: the first poll queues it
    boost::asio::post(rig.io, [&rig] { rig.throttle.stop(); });
    rig.io.run_for(10s); // returns at once when no work is left
    QVERIFY2(rig.io.stopped(), "the throttle kept the io_context busy after stop()");
    QCOMPARE(rig.samples, before);
}

QTEST_APPLESS_MAIN(TestHeadlessThrottle)
#include "test_headless_throttle.moc"
