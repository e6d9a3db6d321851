// Tests of LeaseTable: leases by (kind, task, attempt), expiry at the deadline, per-volunteer
// counts, and taking a lease only for the connection that holds it.
#include <QtTest/QtTest>

#include <algorithm>

#include "work/lease_table.hpp"

using goblin::labnode::Lease;
using goblin::labnode::LeaseTable;

namespace {

Lease lease(std::string_view kind, std::int64_t task, std::int64_t attempt, std::uint64_t peer,
            double deadline) {
    return Lease{kind, task, attempt, peer, "v-" + std::to_string(peer), "cpu", deadline};
}

std::vector<std::int64_t> tasksOf(const std::vector<Lease>& leases) {
    std::vector<std::int64_t> tasks;
    for (const Lease& each : leases)
        tasks.push_back(each.task);
    std::sort(tasks.begin(), tasks.end());
    return tasks;
}

using Ids = std::vector<std::int64_t>;

} // namespace

class TestLeaseTable : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void expiresAtTheDeadline();
    void countsPerVolunteer();
    void takeNeedsTheHolder();
    void kindsDoNotCollide();
    void ofTaskAndTakeOfTask();
};

void TestLeaseTable::expiresAtTheDeadline() {
    LeaseTable table;
    table.add(lease("matmul", 1, 1, 7, 100.0));
    table.add(lease("matmul", 2, 3, 8, 150.0));
    QCOMPARE(tasksOf(table.takeExpired(0.0)), Ids{});
    QCOMPARE(tasksOf(table.takeExpired(99.999)), Ids{});
    QCOMPARE(tasksOf(table.takeExpired(100.0)), (Ids{1}));
    QCOMPARE(table.size(), std::size_t{1});
    QCOMPARE(tasksOf(table.takeExpired(1e9)), (Ids{2}));
    QCOMPARE(table.size(), std::size_t{0});
    QCOMPARE(table.countHeldBy(7), 0);
}

void TestLeaseTable::countsPerVolunteer() {
    LeaseTable table;
    for (std::int64_t task = 1; task <= 4; ++task)
        table.add(lease("matmul", task, 1, task % 2 == 0 ? 2 : 1, 60.0));
    QCOMPARE(table.countHeldBy(1), 2);
    QCOMPARE(table.countHeldBy(2), 2);
    QCOMPARE(table.countHeldBy(3), 0);
    QCOMPARE(tasksOf(table.heldBy(1)), (Ids{1, 3}));
    QCOMPARE(tasksOf(table.heldBy(3)), Ids{});
    QVERIFY(table.take("matmul", 3, 1, 1).has_value());
    QCOMPARE(table.countHeldBy(1), 1);
    QCOMPARE(tasksOf(table.heldBy(1)), (Ids{1}));
    QCOMPARE(tasksOf(table.takeHeldBy(2)), (Ids{2, 4}));
    QCOMPARE(table.countHeldBy(2), 0);
    QCOMPARE(tasksOf(table.takeExpired(1e9)), (Ids{1}));
}

void TestLeaseTable::takeNeedsTheHolder() {
    LeaseTable table;
    table.add(lease("graph", 5, 2, 1, 60.0));
    QVERIFY2(!table.take("graph", 5, 2, 9).has_value(), "another connection took the lease");
    QVERIFY2(!table.take("graph", 5, 3, 1).has_value(), "a later attempt took the lease");
    QVERIFY2(!table.take("graph", 5, 1, 1).has_value(), "an earlier attempt took the lease");
    QCOMPARE(table.countHeldBy(1), 1);
    auto taken = table.take("graph", 5, 2, 1);
    QVERIFY(taken.has_value());
    QCOMPARE(taken->volunteerId, std::string("v-1"));
    QVERIFY2(!table.take("graph", 5, 2, 1).has_value(), "a lease was taken twice");
    QCOMPARE(table.countHeldBy(1), 0);
}

void TestLeaseTable::kindsDoNotCollide() {
    LeaseTable table;
    table.add(lease("matmul", 5, 1, 1, 60.0));
    table.add(lease("graph", 5, 1, 2, 60.0));
    QCOMPARE(table.size(), std::size_t{2});
    QVERIFY(!table.take("graph", 5, 1, 1).has_value());
    QVERIFY(table.take("matmul", 5, 1, 1).has_value());
    QCOMPARE(table.ofTask("graph", 5).size(), std::size_t{1});
    QVERIFY(table.leasedOnBackend("graph", 5, "cpu"));
    QVERIFY(!table.leasedOnBackend("graph", 5, "opencl-graph"));
    QVERIFY2(!table.leasedOnBackend("matmul", 5, "cpu"), "the taken matmul lease still counts");
    QVERIFY(!table.leasedOnBackend("graph", 6, "cpu"));
}

void TestLeaseTable::ofTaskAndTakeOfTask() {
    LeaseTable table;
    table.add(lease("graph", 5, 1, 1, 60.0));
    table.add(lease("graph", 5, 2, 2, 60.0));
    table.add(lease("graph", 6, 1, 1, 60.0));
    QCOMPARE(table.ofTask("graph", 5).size(), std::size_t{2});
    QCOMPARE(table.takeOfTask("graph", 5).size(), std::size_t{2});
    QCOMPARE(table.ofTask("graph", 5).size(), std::size_t{0});
    QCOMPARE(table.countHeldBy(1), 1);
    QCOMPARE(table.countHeldBy(2), 0);
}

QTEST_APPLESS_MAIN(TestLeaseTable)
#include "test_lease_table.moc"
