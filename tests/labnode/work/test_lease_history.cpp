// Tests of LeaseHistory, what the scheduler remembers of leases lost without an answer: bars per
// (kind, task, volunteer), expiries counted per task only for expired leases, hand-backs counted
// per task without a bar, and a volunteer's slots halved on each expiry and given back one per
// answered lease.
#include <QtTest/QtTest>

#include <cstdint>
#include <string>

#include "work/lease_history.hpp"

using goblin::labnode::LeaseHistory;
using goblin::labnode::LeaseLoss;

class TestLeaseHistory : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aVolunteerThatLostALeaseNeverGetsThatTaskAgain();
    void theBarIsForThatKindTaskAndVolunteerOnly();
    void everyLossOfTheVolunteersBarsButAFrameNeverSentDoesNot();
    void onlyExpiredLeasesCountTowardsATasksExpiries();
    void handBacksAreCountedPerTaskAndBarNobody();
    void aVolunteerNeverSeenGetsItsAdvertisedSlots();
    void eachExpiryHalvesTheSlotsButLeavesAtLeastOne();
    void eachAnsweredLeaseGivesOneSlotBackUpToTheAdvertised();
    void slotsArePerVolunteerAndUntouchedByRemember();
};

void TestLeaseHistory::aVolunteerThatLostALeaseNeverGetsThatTaskAgain() {
    LeaseHistory history;
    QVERIFY(!history.barred("matmul", 1, "v-a"));
    history.remember("matmul", 1, "v-a", LeaseLoss::Disconnected);
    QVERIFY(history.barred("matmul", 1, "v-a"));
    history.onAnswered("v-a", 4);
    history.onHandedBack("matmul", 1);
    QVERIFY2(history.barred("matmul", 1, "v-a"), "the bar was lifted");
}

void TestLeaseHistory::theBarIsForThatKindTaskAndVolunteerOnly() {
    LeaseHistory history;
    history.remember("matmul", 1, "v-a", LeaseLoss::Expired);
    QVERIFY(history.barred("matmul", 1, "v-a"));
    QVERIFY2(!history.barred("graph", 1, "v-a"), "another kind's task 1 is barred");
    QVERIFY2(!history.barred("matmul", 2, "v-a"), "another task is barred");
    QVERIFY2(!history.barred("matmul", 1, "v-b"), "another volunteer is barred");
    history.remember("matmul", 1, "v-b", LeaseLoss::TaskError);
    QVERIFY(history.barred("matmul", 1, "v-a"));
    QVERIFY(history.barred("matmul", 1, "v-b"));
    QVERIFY(!history.barred("matmul", 1, "v-c"));
}

void TestLeaseHistory::everyLossOfTheVolunteersBarsButAFrameNeverSentDoesNot() {
    LeaseHistory history;
    history.remember("graph", 1, "v-a", LeaseLoss::Expired);
    history.remember("graph", 2, "v-a", LeaseLoss::Disconnected);
    history.remember("graph", 3, "v-a", LeaseLoss::TaskError);
    history.remember("graph", 4, "v-a", LeaseLoss::NotSent);
    QVERIFY(history.barred("graph", 1, "v-a"));
    QVERIFY(history.barred("graph", 2, "v-a"));
    QVERIFY(history.barred("graph", 3, "v-a"));
    QVERIFY2(!history.barred("graph", 4, "v-a"), "the volunteer never saw the task");
    QCOMPARE(history.expiries("graph", 4), 0);
}

void TestLeaseHistory::onlyExpiredLeasesCountTowardsATasksExpiries() {
    LeaseHistory history;
    QCOMPARE(history.expiries("matmul", 1), 0);
    history.remember("matmul", 1, "v-a", LeaseLoss::Disconnected);
    history.remember("matmul", 1, "v-b", LeaseLoss::TaskError);
    history.remember("matmul", 1, "v-c", LeaseLoss::NotSent);
    QCOMPARE(history.expiries("matmul", 1), 0);
    history.remember("matmul", 1, "v-d", LeaseLoss::Expired);
    QCOMPARE(history.expiries("matmul", 1), 1);
    history.remember("matmul", 1, "v-e", LeaseLoss::Expired);
    QCOMPARE(history.expiries("matmul", 1), 2);
    QCOMPARE(history.expiries("matmul", 2), 0);
    QCOMPARE(history.expiries("graph", 1), 0);
    history.remember("graph", 1, "v-d", LeaseLoss::Expired);
    QCOMPARE(history.expiries("graph", 1), 1);
    QCOMPARE(history.expiries("matmul", 1), 2);
}

void TestLeaseHistory::handBacksAreCountedPerTaskAndBarNobody() {
    LeaseHistory history;
    QCOMPARE(history.handBacks("matmul", 1), 0);
    history.onHandedBack("matmul", 1);
    history.onHandedBack("matmul", 1);
    history.onHandedBack("graph", 1);
    QCOMPARE(history.handBacks("matmul", 1), 2);
    QCOMPARE(history.handBacks("graph", 1), 1);
    QCOMPARE(history.handBacks("matmul", 2), 0);
    QCOMPARE(history.expiries("matmul", 1), 0);
    QVERIFY(!history.barred("matmul", 1, "v-a"));
    history.remember("matmul", 1, "v-a", LeaseLoss::Expired);
    QCOMPARE(history.handBacks("matmul", 1), 2);
    QCOMPARE(history.slotsFor("v-a", 4), 4);
}

void TestLeaseHistory::aVolunteerNeverSeenGetsItsAdvertisedSlots() {
    LeaseHistory history;
    QCOMPARE(history.slotsFor("v-new", 1), 1);
    QCOMPARE(history.slotsFor("v-new", 6), 6);
    history.onAnswered("v-new", 6);
    QCOMPARE(history.slotsFor("v-new", 6), 6);
}

void TestLeaseHistory::eachExpiryHalvesTheSlotsButLeavesAtLeastOne() {
    LeaseHistory history;
    history.onExpired("v-a", 8);
    QCOMPARE(history.slotsFor("v-a", 8), 4);
    history.onExpired("v-a", 8);
    QCOMPARE(history.slotsFor("v-a", 8), 2);
    history.onExpired("v-a", 8);
    QCOMPARE(history.slotsFor("v-a", 8), 1);
    history.onExpired("v-a", 8);
    QCOMPARE(history.slotsFor("v-a", 8), 1);

    history.onExpired("v-odd", 5);
    QCOMPARE(history.slotsFor("v-odd", 5), 2);
    history.onExpired("v-one", 1);
    QCOMPARE(history.slotsFor("v-one", 1), 1);
}

void TestLeaseHistory::eachAnsweredLeaseGivesOneSlotBackUpToTheAdvertised() {
    LeaseHistory history;
    history.onExpired("v-a", 8);
    history.onExpired("v-a", 8);
    QCOMPARE(history.slotsFor("v-a", 8), 2);
    for (int expected = 3; expected <= 8; ++expected) {
        history.onAnswered("v-a", 8);
        QCOMPARE(history.slotsFor("v-a", 8), expected);
    }
    history.onAnswered("v-a", 8);
    QCOMPARE(history.slotsFor("v-a", 8), 8);
    // Back at what it advertises: the next expiry halves from there again.
    history.onExpired("v-a", 8);
    QCOMPARE(history.slotsFor("v-a", 8), 4);
    // Never more than what it advertises now.
    QCOMPARE(history.slotsFor("v-a", 3), 3);
}

void TestLeaseHistory::slotsArePerVolunteerAndUntouchedByRemember() {
    LeaseHistory history;
    history.remember("matmul", 1, "v-a", LeaseLoss::Expired);
    QCOMPARE(history.slotsFor("v-a", 4), 4);
    history.onExpired("v-a", 4);
    QCOMPARE(history.slotsFor("v-a", 4), 2);
    QCOMPARE(history.slotsFor("v-b", 4), 4);
    history.onAnswered("v-b", 4);
    QCOMPARE(history.slotsFor("v-a", 4), 2);
}

QTEST_APPLESS_MAIN(TestLeaseHistory)
#include "test_lease_history.moc"
