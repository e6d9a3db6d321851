// Tests of MinuteHistory on an injected clock: counts land in the current minute, move left as
// minutes pass, read as zero once an hour old (and their bucket is reused), the window starts on
// a whole minute, and new series beyond the cap are refused.
#include <QtTest/QtTest>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "http/minute_history.hpp"

using goblin::labnode::MinuteHistory;

namespace {

constexpr double kStart = 1'699'999'980.0 + 17.5; // 17.5 s into a minute
using Counts = std::vector<std::uint64_t>;

// kMinutes counts, zero but for {index, count} pairs.
Counts countsWith(std::initializer_list<std::pair<int, std::uint64_t>> set) {
    Counts counts(MinuteHistory::kMinutes, 0);
    for (const auto& [index, count] : set)
        counts[static_cast<std::size_t>(index)] = count;
    return counts;
}

} // namespace

class TestMinuteHistory : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void startsEmpty();
    void countsLandInTheCurrentMinute();
    void countsMoveLeftAsMinutesPass();
    void anHourOldCountReadsAsZeroAndItsBucketIsReused();
    void aLongSilenceLeavesZeros();
    void newSeriesBeyondTheCapAreRefused();
};

void TestMinuteHistory::startsEmpty() {
    double now = kStart;
    MinuteHistory history([&now] { return now; });
    const auto window = history.window();
    QVERIFY(window.series.empty());
    // 59 whole minutes before the current minute's start.
    QCOMPARE(window.firstMinute, std::floor(kStart / 60.0) * 60.0 - 59 * 60.0);
}

void TestMinuteHistory::countsLandInTheCurrentMinute() {
    double now = kStart;
    MinuteHistory history([&now] { return now; });
    QVERIFY(history.add("accepted matmul"));
    QVERIFY(history.add("accepted matmul", 4));
    now += 42.0; // still the same minute (17.5 s + 42 s)
    QVERIFY(history.add("rejected graph"));
    const auto window = history.window();
    QCOMPARE(window.series.size(), std::size_t{2});
    QCOMPARE(window.series.at("accepted matmul"), countsWith({{59, 5}}));
    QCOMPARE(window.series.at("rejected graph"), countsWith({{59, 1}}));
}

void TestMinuteHistory::countsMoveLeftAsMinutesPass() {
    double now = kStart;
    MinuteHistory history([&now] { return now; });
    history.add("accepted graph", 3);
    now += 60.0;
    history.add("accepted graph", 2);
    now += 10 * 60.0;
    history.add("accepted graph", 7);
    const auto window = history.window();
    QCOMPARE(window.series.at("accepted graph"), countsWith({{48, 3}, {49, 2}, {59, 7}}));
    QCOMPARE(window.firstMinute, std::floor(now / 60.0) * 60.0 - 59 * 60.0);
}

void TestMinuteHistory::anHourOldCountReadsAsZeroAndItsBucketIsReused() {
    double now = kStart;
    MinuteHistory history([&now] { return now; });
    history.add("accepted matmul", 9);
    now += 59 * 60.0;
    QCOMPARE(history.window().series.at("accepted matmul"), countsWith({{0, 9}}));
    now += 60.0; // the first count is an hour old: its minute left the window
    QCOMPARE(history.window().series.at("accepted matmul"), countsWith({}));
    // The same ring slot now counts this minute, from zero.
    history.add("accepted matmul");
    QCOMPARE(history.window().series.at("accepted matmul"), countsWith({{59, 1}}));
}

void TestMinuteHistory::aLongSilenceLeavesZeros() {
    double now = kStart;
    MinuteHistory history([&now] { return now; });
    for (int minute = 0; minute < 60; ++minute) {
        history.add("accepted graph", static_cast<std::uint64_t>(minute + 1));
        now += 60.0;
    }
    now += 24 * 3600.0; // a day later
    QCOMPARE(history.window().series.at("accepted graph"), countsWith({}));
}

void TestMinuteHistory::newSeriesBeyondTheCapAreRefused() {
    double now = kStart;
    MinuteHistory history([&now] { return now; });
    for (std::size_t i = 0; i < MinuteHistory::kMaxSeries; ++i)
        QVERIFY(history.add("series " + std::to_string(i)));
    QVERIFY(!history.add("one too many"));
    QVERIFY(history.add("series 0")); // a known series still counts
    const auto window = history.window();
    QCOMPARE(window.series.size(), MinuteHistory::kMaxSeries);
    QVERIFY(!window.series.contains("one too many"));
    QCOMPARE(window.series.at("series 0"), countsWith({{59, 2}}));
}

QTEST_APPLESS_MAIN(TestMinuteHistory)
#include "test_minute_history.moc"
