// Freed memory goes back once the engines go idle: one release per busy → idle change, after a
// quiet spell, none while work goes on or while idle stays idle.
#include <QtTest>

#include "memory_release.hpp"

using namespace goblin::volunteer;

class TestMemoryRelease : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void releasesOnceWhenWorkStops();
    void workAgainCancelsTheRelease();
};

void TestMemoryRelease::releasesOnceWhenWorkStops() {
    int calls = 0;
    MemoryRelease release([&] { ++calls; }, 0);
    release.setBusy(false); // idle from the start: nothing to give back
    QTest::qWait(20);
    QCOMPARE(calls, 0);
    release.setBusy(true);
    release.setBusy(true);
    QTest::qWait(20);
    QCOMPARE(calls, 0);
    release.setBusy(false);
    QTRY_COMPARE(calls, 1);
    release.setBusy(false);
    release.setBusy(false);
    QTest::qWait(20);
    QCOMPARE(calls, 1);
    QCOMPARE(release.releases(), 1);
}

void TestMemoryRelease::workAgainCancelsTheRelease() {
    int calls = 0;
    MemoryRelease release([&] { ++calls; }, 60'000);
    release.setBusy(true);
    release.setBusy(false); // quiet spell starts…
    release.setBusy(true);  // …and work comes back before it ends
    QTest::qWait(20);
    QCOMPARE(calls, 0);
    QCOMPARE(release.releases(), 0);
}

QTEST_MAIN(TestMemoryRelease)
#include "test_memory_release.moc"
