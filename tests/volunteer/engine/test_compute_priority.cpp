// The compute priority on real threads: lowering a thread puts it at nice 19 in the idle I/O
// class, leaves the other threads alone, and threads it starts afterwards inherit both;
// lowerThreadsExcept spares the thread it is told to keep.
#include <QtTest>

#include <future>
#include <thread>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compute_priority.hpp"

using namespace goblin::volunteer;

class TestComputePriority : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void parsesTheOptionValues();
    void lowersOnlyTheCallingThread();
    void lowersTheOthersButTheKeptOne();
};

namespace {

int niceOf(long tid) {
    errno = 0;
    return ::getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
}

int ioClassOf(long tid) {
    return static_cast<int>(::syscall(SYS_ioprio_get, 1, tid) >> 13);
}

} // namespace

void TestComputePriority::parsesTheOptionValues() {
    QCOMPARE(parseComputePriority("low"), std::optional(ComputePriority::Low));
    QCOMPARE(parseComputePriority("normal"), std::optional(ComputePriority::Normal));
    QVERIFY(!parseComputePriority("idle"));
    QVERIFY(!parseComputePriority(""));
}

void TestComputePriority::lowersOnlyTheCallingThread() {
    const long self = currentThreadId();
    const int niceBefore = niceOf(self);
    auto seen = std::async(std::launch::async, [] {
        const long tid = currentThreadId();
        auto lowered = lowerThisThread();
        // A thread started afterwards reads what it inherited.
        int childNice = 0, childIo = 0;
        std::thread reader([&] {
            childNice = niceOf(currentThreadId());
            childIo = ioClassOf(currentThreadId());
        });
        reader.join();
        return std::tuple{lowered.has_value(), niceOf(tid), ioClassOf(tid), childNice, childIo};
    });
    const auto [ok, nice, ioClass, childNice, childIo] = seen.get();
    QVERIFY(ok);
    QCOMPARE(nice, 19);
    QCOMPARE(ioClass, 3); // IOPRIO_CLASS_IDLE
    QCOMPARE(childNice, 19);
    QCOMPARE(childIo, 3);
    QCOMPARE(niceOf(self), niceBefore); // the test's own thread kept its priority
}

void TestComputePriority::lowersTheOthersButTheKeptOne() {
    std::promise<long> started;
    std::promise<void> finish;
    std::thread other([&] {
        started.set_value(currentThreadId());
        finish.get_future().wait();
    });
    const long otherTid = started.get_future().get();
    const long self = currentThreadId();
    const int niceBefore = niceOf(self);
    auto lowered = lowerThreadsExcept(self);
    const int otherNice = niceOf(otherTid);
    finish.set_value();
    other.join();
    QVERIFY2(lowered.has_value(), lowered ? "" : lowered.error().message.c_str());
    QVERIFY(*lowered >= 1);
    QCOMPARE(otherNice, 19);
    QCOMPARE(niceOf(self), niceBefore);
}

QTEST_APPLESS_MAIN(TestComputePriority)
#include "test_compute_priority.moc"
