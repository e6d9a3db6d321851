// The throttle decision table: idle thresholds and hysteresis, schedule edges across midnight and
// weekdays, battery and memory bands, user pauses, caps. The clock is a plain value: no sleeps.
#include <QtTest>

#include "throttle_policy.hpp"

using namespace goblin::volunteer;

namespace {

using Samples = QList<QPair<double, double>>; // (steady time, idle seconds)

constexpr int kMon = 0, kTue = 1, kWed = 2, kSun = 6;

ThrottleNow at(double steady, int weekday = kMon, int hour = 12, int minute = 0) {
    return ThrottleNow{steady, weekday, hour * 60 + minute};
}

HostState idleFor(double seconds) {
    HostState host;
    host.idleSeconds = seconds;
    host.hardwareThreads = 8;
    return host;
}

// Replays a sequence of (steady time, idle seconds) samples, returning run/pause per sample.
QList<bool> replayIdle(const ThrottleSettings& settings, const Samples& samples) {
    ThrottleMemory memory;
    QList<bool> runs;
    for (const auto& [time, idle] : samples) {
        const auto outcome =
            decideThrottle(settings, UserPause::none(), idleFor(idle), at(time), memory);
        memory = outcome.memory;
        runs.append(outcome.decision.run);
    }
    return runs;
}

} // namespace

class TestThrottlePolicy : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void defaultsRunOnAllCores();
    void idleThreshold_data();
    void idleThreshold();
    void idleHysteresis_data();
    void idleHysteresis();
    void idleUnknownWaits();
    void schedule_data();
    void schedule();
    void battery_data();
    void battery();
    void memoryBand();
    void networkCap();
    void userPause();
    void reasonsInPriorityOrder();
    void cpuAndGpuPlans();
};

void TestThrottlePolicy::defaultsRunOnAllCores() {
    const auto out = decideThrottle({}, UserPause::none(), idleFor(0), at(0), {});
    QVERIFY(out.decision.run);
    QCOMPARE(out.decision.reason, ThrottleReason::None);
    QCOMPARE(out.decision.cpuThreads, 8);
    QCOMPARE(out.decision.cpuDutyPercent, 100);
}

void TestThrottlePolicy::idleThreshold_data() {
    QTest::addColumn<int>("idleMinutes");
    QTest::addColumn<double>("idleSeconds");
    QTest::addColumn<bool>("run");
    QTest::newRow("off, user active") << 0 << 0.0 << true;
    QTest::newRow("5 min, idle 0 s") << 5 << 0.0 << false;
    QTest::newRow("5 min, idle 299 s") << 5 << 299.0 << false;
    QTest::newRow("5 min, idle 299.9 s") << 5 << 299.9 << false;
    QTest::newRow("5 min, idle exactly 300 s") << 5 << 300.0 << true;
    QTest::newRow("5 min, idle 3600 s") << 5 << 3600.0 << true;
    QTest::newRow("1 min, idle 60 s") << 1 << 60.0 << true;
}

void TestThrottlePolicy::idleThreshold() {
    QFETCH(int, idleMinutes);
    QFETCH(double, idleSeconds);
    QFETCH(bool, run);
    ThrottleSettings settings;
    settings.idleMinutes = idleMinutes;
    const auto out =
        decideThrottle(settings, UserPause::none(), idleFor(idleSeconds), at(1000), {});
    QCOMPARE(out.decision.run, run);
    QCOMPARE(out.decision.reason, run ? ThrottleReason::None : ThrottleReason::NotIdle);
}

void TestThrottlePolicy::idleHysteresis_data() {
    // Settings: idle 5 minutes, grace 30 s. Samples are (steady time, idle seconds).
    QTest::addColumn<Samples>("samples");
    QTest::addColumn<QList<bool>>("runs");
    using S = Samples;
    QTest::newRow("a nudge does not stop work")
        << S{{1000, 300}, {1001, 0}, {1010, 9}, {1031, 30}, {1040, 39}}
        << QList<bool>{true, true, true, true, true};
    QTest::newRow("activity lasting the grace period stops work")
        << S{{1000, 300}, {1001, 0}, {1015, 1}, {1030, 2}, {1031, 0}}
        << QList<bool>{true, true, true, true, false};
    QTest::newRow("after stopping, only the full idle time restarts")
        << S{{1000, 300}, {1001, 0}, {1031, 0}, {1100, 69}, {1200, 169}, {1331, 299}, {1332, 300}}
        << QList<bool>{true, true, false, false, false, false, true};
    QTest::newRow("two nudges inside the grace period stop work")
        << S{{1000, 300}, {1001, 0}, {1016, 0}, {1031, 15}} << QList<bool>{true, true, true, false};
    QTest::newRow("never idle long enough")
        << S{{0, 0}, {100, 100}, {250, 250}, {260, 0}, {400, 140}}
        << QList<bool>{false, false, false, false, false};
}

void TestThrottlePolicy::idleHysteresis() {
    QFETCH(Samples, samples);
    QFETCH(QList<bool>, runs);
    ThrottleSettings settings;
    settings.idleMinutes = 5;
    settings.idleGraceSeconds = 30;
    QCOMPARE(replayIdle(settings, samples), runs);
}

void TestThrottlePolicy::idleUnknownWaits() {
    ThrottleSettings settings;
    settings.idleMinutes = 5;
    HostState host;
    const auto out = decideThrottle(settings, UserPause::none(), host, at(0), {});
    QVERIFY(!out.decision.run);
    QCOMPARE(out.decision.reason, ThrottleReason::IdleUnknown);
    settings.idleMinutes = 0;
    QVERIFY(decideThrottle(settings, UserPause::none(), host, at(0), {}).decision.run);
}

void TestThrottlePolicy::schedule_data() {
    QTest::addColumn<int>("weekday");
    QTest::addColumn<int>("hour");
    QTest::addColumn<int>("minute");
    QTest::addColumn<bool>("allowed");
    // Allowed: Mon 22:00-06:00 (crosses into Tuesday), Wed 09:00-17:00, Sun 23:00-01:00 (crosses
    // into Monday, across the week's end).
    QTest::newRow("Mon 21:59 before the night range") << kMon << 21 << 59 << false;
    QTest::newRow("Mon 22:00 first minute") << kMon << 22 << 0 << true;
    QTest::newRow("Mon 23:59 before midnight") << kMon << 23 << 59 << true;
    QTest::newRow("Tue 00:00 after midnight") << kTue << 0 << 0 << true;
    QTest::newRow("Tue 05:59 last minute") << kTue << 5 << 59 << true;
    QTest::newRow("Tue 06:00 end is exclusive") << kTue << 6 << 0 << false;
    QTest::newRow("Tue 22:30 Monday's range only") << kTue << 22 << 30 << false;
    QTest::newRow("Wed 08:59") << kWed << 8 << 59 << false;
    QTest::newRow("Wed 09:00") << kWed << 9 << 0 << true;
    QTest::newRow("Wed 16:59") << kWed << 16 << 59 << true;
    QTest::newRow("Wed 17:00") << kWed << 17 << 0 << false;
    QTest::newRow("Sun 22:59") << kSun << 22 << 59 << false;
    QTest::newRow("Sun 23:30") << kSun << 23 << 30 << true;
    QTest::newRow("Mon 00:30 wraps the week") << kMon << 0 << 30 << true;
    QTest::newRow("Mon 01:00 end of wrapped range") << kMon << 1 << 0 << false;
}

void TestThrottlePolicy::schedule() {
    QFETCH(int, weekday);
    QFETCH(int, hour);
    QFETCH(int, minute);
    QFETCH(bool, allowed);
    ThrottleSettings settings;
    settings.scheduleEnabled = true;
    settings.schedule = {{kMon, 22 * 60, 6 * 60}, {kWed, 9 * 60, 17 * 60}, {kSun, 23 * 60, 60}};
    const auto out =
        decideThrottle(settings, UserPause::none(), idleFor(0), at(0, weekday, hour, minute), {});
    QCOMPARE(out.decision.run, allowed);
    QCOMPARE(out.decision.reason, allowed ? ThrottleReason::None : ThrottleReason::OutsideSchedule);
}

void TestThrottlePolicy::battery_data() {
    // pause on battery off, minimum 20 %: pause below 20, resume at 25 (hysteresis band).
    QTest::addColumn<QList<int>>("levels");
    QTest::addColumn<QList<bool>>("runs");
    QTest::newRow("above the minimum") << QList<int>{100, 50, 20} << QList<bool>{true, true, true};
    QTest::newRow("drop below, rise inside the band, rise above")
        << QList<int>{21, 19, 20, 24, 25, 22} << QList<bool>{true, false, false, false, true, true};
    QTest::newRow("empty battery") << QList<int>{0} << QList<bool>{false};
}

void TestThrottlePolicy::battery() {
    QFETCH(QList<int>, levels);
    QFETCH(QList<bool>, runs);
    ThrottleSettings settings;
    settings.pauseOnBattery = false;
    settings.minBatteryPercent = 20;
    ThrottleMemory memory;
    QList<bool> seen;
    for (int level : levels) {
        HostState host = idleFor(0);
        host.onBattery = true;
        host.batteryPercent = level;
        const auto out = decideThrottle(settings, UserPause::none(), host, at(0), memory);
        memory = out.memory;
        seen.append(out.decision.run);
        if (!out.decision.run)
            QCOMPARE(out.decision.reason, ThrottleReason::BatteryLow);
    }
    QCOMPARE(seen, runs);

    // Pause on battery: any level on battery waits; mains power runs.
    settings.pauseOnBattery = true;
    HostState host = idleFor(0);
    host.batteryPercent = 90;
    host.onBattery = true;
    QCOMPARE(decideThrottle(settings, UserPause::none(), host, at(0), {}).decision.reason,
             ThrottleReason::OnBattery);
    host.onBattery = false;
    QVERIFY(decideThrottle(settings, UserPause::none(), host, at(0), {}).decision.run);
    // No battery at all (a desktop): the minimum charge does not apply.
    host.batteryPercent.reset();
    QVERIFY(decideThrottle(settings, UserPause::none(), host, at(0), {}).decision.run);
}

void TestThrottlePolicy::memoryBand() {
    ThrottleSettings settings;
    settings.pauseAboveMemoryPercent = 90;
    ThrottleMemory memory;
    QList<bool> seen;
    for (double used : {80.0, 90.0, 87.0, 85.0, 84.9}) {
        HostState host = idleFor(0);
        host.memoryUsedPercent = used;
        const auto out = decideThrottle(settings, UserPause::none(), host, at(0), memory);
        memory = out.memory;
        seen.append(out.decision.run);
    }
    QCOMPARE(seen, (QList<bool>{true, false, false, false, true}));
    settings.pauseAboveMemoryPercent = 0; // never
    HostState full = idleFor(0);
    full.memoryUsedPercent = 100;
    QVERIFY(decideThrottle(settings, UserPause::none(), full, at(0), {}).decision.run);
}

void TestThrottlePolicy::networkCap() {
    ThrottleSettings settings;
    settings.networkCapMiBPerDay = 100;
    HostState host = idleFor(0);
    host.networkBytesToday = 100LL * 1024 * 1024 - 1;
    QVERIFY(decideThrottle(settings, UserPause::none(), host, at(0), {}).decision.run);
    host.networkBytesToday += 1;
    QCOMPARE(decideThrottle(settings, UserPause::none(), host, at(0), {}).decision.reason,
             ThrottleReason::NetworkCap);
}

void TestThrottlePolicy::userPause() {
    const HostState host = idleFor(0);
    QCOMPARE(decideThrottle({}, UserPause::indefinite(), host, at(1e9), {}).decision.reason,
             ThrottleReason::UserPaused);
    const UserPause hour = UserPause::until(100 + 3600);
    QVERIFY(!decideThrottle({}, hour, host, at(100), {}).decision.run);
    QVERIFY(!decideThrottle({}, hour, host, at(3699.9), {}).decision.run);
    QVERIFY(decideThrottle({}, hour, host, at(3700), {}).decision.run);
}

void TestThrottlePolicy::reasonsInPriorityOrder() {
    ThrottleSettings settings;
    settings.idleMinutes = 5;
    settings.scheduleEnabled = true; // no ranges: never allowed
    HostState host = idleFor(0);
    host.onBattery = true;
    // The idle band still tracks while a more important reason holds work back.
    auto out = decideThrottle(settings, UserPause::indefinite(), host, at(0), {});
    QCOMPARE(out.decision.reason, ThrottleReason::UserPaused);
    out = decideThrottle(settings, UserPause::none(), host, at(0), {});
    QCOMPARE(out.decision.reason, ThrottleReason::OutsideSchedule);
    settings.scheduleEnabled = false;
    out = decideThrottle(settings, UserPause::none(), host, at(0), {});
    QCOMPARE(out.decision.reason, ThrottleReason::OnBattery);
    host.onBattery = false;
    host.idleSeconds = 400;
    out = decideThrottle(settings, UserPause::none(), host, at(0), out.memory);
    QVERIFY(out.decision.run);
    QVERIFY(out.memory.idleReached);
}

void TestThrottlePolicy::cpuAndGpuPlans() {
    ThrottleSettings settings;
    settings.cpuCores = 99;
    settings.cpuLimitPercent = 0;
    settings.gpus = {{"gpu0", true, 40, {}}, {"gpu1", false, 100, {}}, {"gpu2", true, 250, {}}};
    auto out = decideThrottle(settings, UserPause::none(), idleFor(0), at(0), {});
    QCOMPARE(out.decision.cpuThreads, 8);
    QCOMPARE(out.decision.cpuDutyPercent, 1);
    QCOMPARE(out.decision.gpus, (std::vector<GpuPlan>{{true, 40}, {false, 0}, {true, 100}}));
    settings.cpuCores = 3;
    settings.cpuLimitPercent = 25;
    out = decideThrottle(settings, UserPause::indefinite(), idleFor(0), at(0), {});
    QCOMPARE(out.decision.cpuThreads, 3);
    QCOMPARE(out.decision.cpuDutyPercent, 25);
    QCOMPARE(out.decision.gpus, (std::vector<GpuPlan>{{false, 0}, {false, 0}, {false, 0}}));
}

QTEST_APPLESS_MAIN(TestThrottlePolicy)
#include "test_throttle_policy.moc"
