// The volunteer's host memory: what is available is read from the system, and the block size
// from which the allocator maps blocks for themselves follows what the volunteer lends (a 64th,
// between 64 KiB and glibc's largest, 32 MiB). That the setting keeps a small volunteer's
// resident memory near what it lends is tested end to end
// (python/tests/test_graph_stages.py::test_a_small_volunteers_resident_memory_grows_by_about_what_it_lends).
#include <QtTest>

#include "host_memory.hpp"

using namespace goblin::volunteer;

class TestHostMemory : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void availableMemoryIsReadFromTheSystem();
    void theMappedBlockSizeFollowsWhatIsLent();
};

void TestHostMemory::availableMemoryIsReadFromTheSystem() {
    QVERIFY(availableMemoryBytes() > 0);
}

void TestHostMemory::theMappedBlockSizeFollowsWhatIsLent() {
    QCOMPARE(mappedBlockBytes(std::int64_t{3} << 20), std::int64_t{64} << 10);
    QCOMPARE(mappedBlockBytes(std::int64_t{64} << 20), std::int64_t{1} << 20);
    QCOMPARE(mappedBlockBytes(std::int64_t{2} << 30), std::int64_t{32} << 20);
    QCOMPARE(mappedBlockBytes(std::int64_t{64} << 30), std::int64_t{32} << 20);
    QCOMPARE(mappedBlockBytes(0), std::int64_t{64} << 10);
}

QTEST_APPLESS_MAIN(TestHostMemory)
#include "test_host_memory.moc"
