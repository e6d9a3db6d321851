// The throttle tracker both front ends share: it reports a decision on the first evaluation and
// then only on a change, keeps the idle hysteresis between evaluations, and a timed pause ends
// by itself; the system clock's weekday counts from Monday.
#include <QtTest>

#include "throttle_tracker.hpp"

using namespace goblin::volunteer;

class TestThrottleTracker : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void reportsOnlyChanges();
    void idleHysteresisSpansEvaluations();
    void timedPauseEnds();
    void systemClockIsInRange();
};

namespace {

HostState idleFor(double seconds) {
    HostState host;
    host.idleSeconds = seconds;
    host.hardwareThreads = 2;
    return host;
}

} // namespace

void TestThrottleTracker::reportsOnlyChanges() {
    ThrottleTracker tracker;
    ThrottleSettings settings;
    settings.cpuLimitPercent = 40;
    tracker.setSettings(settings);
    QVERIFY(tracker.evaluate(idleFor(0), ThrottleNow{0, 0, 0}));
    QVERIFY(tracker.decision().run);
    QCOMPARE(tracker.decision().cpuDutyPercent, 40);
    QVERIFY(!tracker.evaluate(idleFor(0), ThrottleNow{1, 0, 0}));
    settings.cpuLimitPercent = 60;
    tracker.setSettings(settings);
    QVERIFY(tracker.evaluate(idleFor(0), ThrottleNow{2, 0, 0}));
    QCOMPARE(tracker.decision().cpuDutyPercent, 60);
    QCOMPARE(tracker.lastHost().hardwareThreads, 2);
}

void TestThrottleTracker::idleHysteresisSpansEvaluations() {
    ThrottleTracker tracker;
    ThrottleSettings settings;
    settings.idleMinutes = 1;
    settings.idleGraceSeconds = 30;
    tracker.setSettings(settings);
    tracker.evaluate(idleFor(10), ThrottleNow{0, 0, 0});
    QCOMPARE(tracker.decision().reason, ThrottleReason::NotIdle);
    QVERIFY(tracker.evaluate(idleFor(61), ThrottleNow{51, 0, 0}));
    QVERIFY(tracker.decision().run);
    // A touch of the mouse: work goes on through the grace period…
    QVERIFY(!tracker.evaluate(idleFor(1), ThrottleNow{60, 0, 0}));
    QVERIFY(!tracker.evaluate(idleFor(0), ThrottleNow{80, 0, 0}));
    // …and stops once activity lasted the grace period.
    QVERIFY(tracker.evaluate(idleFor(0), ThrottleNow{95, 0, 0}));
    QCOMPARE(tracker.decision().reason, ThrottleReason::NotIdle);
}

void TestThrottleTracker::timedPauseEnds() {
    ThrottleTracker tracker;
    tracker.pauseUntil(100);
    tracker.evaluate(idleFor(0), ThrottleNow{10, 0, 0});
    QCOMPARE(tracker.decision().reason, ThrottleReason::UserPaused);
    QVERIFY(tracker.evaluate(idleFor(0), ThrottleNow{100, 0, 0}));
    QVERIFY(tracker.decision().run);
    tracker.pauseUntilResumed();
    tracker.evaluate(idleFor(0), ThrottleNow{1e9, 0, 0});
    QCOMPARE(tracker.decision().reason, ThrottleReason::UserPaused);
    tracker.resume();
    QVERIFY(tracker.evaluate(idleFor(0), ThrottleNow{1e9, 0, 0}));
}

void TestThrottleTracker::systemClockIsInRange() {
    const ThrottleClock clock = systemThrottleClock();
    const ThrottleNow first = clock();
    const ThrottleNow second = clock();
    QVERIFY(first.steadySeconds >= 0 && second.steadySeconds >= first.steadySeconds);
    QVERIFY(first.weekday >= 0 && first.weekday <= 6);
    QVERIFY(first.minuteOfDay >= 0 && first.minuteOfDay < 24 * 60);
}

QTEST_APPLESS_MAIN(TestThrottleTracker)
#include "test_throttle_tracker.moc"
