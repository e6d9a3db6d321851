// Freed memory goes back once the engine goes idle: one release per busy → idle change, after a
// quiet spell, none while work goes on or while idle stays idle. Driven on an io_context; the
// waits poll for the event (no assertion on elapsed time).
#include <QtTest>

#include "memory_release.hpp"

using namespace goblin::volunteer;
using namespace std::chrono_literals;

class TestMemoryRelease : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void releasesOnceWhenWorkStops();
    void workAgainCancelsTheRelease();
};

namespace {

// Runs the io_context's ready handlers (and timers due) for a moment.
void spin(boost::asio::io_context& io) {
    io.restart();
    io.run_for(20ms);
}

} // namespace

void TestMemoryRelease::releasesOnceWhenWorkStops() {
    boost::asio::io_context io;
    int calls = 0;
    MemoryRelease release(
        io, [&] { ++calls; }, 0ms);
    release.setBusy(false); // idle from the start: nothing to give back
    spin(io);
    QCOMPARE(calls, 0);
    release.setBusy(true);
    release.setBusy(true);
    spin(io);
    QCOMPARE(calls, 0);
    release.setBusy(false);
    for (int i = 0; i < 500 && calls == 0; ++i)
        spin(io);
    QCOMPARE(calls, 1);
    release.setBusy(false);
    release.setBusy(false);
    spin(io);
    QCOMPARE(calls, 1);
    QCOMPARE(release.releases(), 1);
}

void TestMemoryRelease::workAgainCancelsTheRelease() {
    boost::asio::io_context io;
    int calls = 0;
    MemoryRelease release(
        io, [&] { ++calls; }, 60s);
    release.setBusy(true);
    release.setBusy(false); // quiet spell starts…
    release.setBusy(true);  // …and work comes back before it ends
    spin(io);
    QCOMPARE(calls, 0);
    QCOMPARE(release.releases(), 0);
}

QTEST_APPLESS_MAIN(TestMemoryRelease)
#include "test_memory_release.moc"
