// Tests of the one job lifecycle: stored names round-trip, the table allows what every kind does
// (running → done | failed | cancelled → released or retained → released) and nothing else.
#include <QtTest/QtTest>

#include <string_view>

#include "work/job_state.hpp"

using goblin::labnode::JobState;
using goblin::labnode::mayChange;
using goblin::labnode::parseJobState;

class TestJobState : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void storedNamesRoundTrip();
    void unknownNamesAreRefused();
    void aRunningJobEndsOneWay();
    void anEndedJobIsReleasedOrRetained();
    void nothingRunsAgain();
};

void TestJobState::storedNamesRoundTrip() {
    for (JobState state : {JobState::Running, JobState::Done, JobState::Failed, JobState::Cancelled,
                           JobState::Retained, JobState::Released}) {
        const auto parsed = parseJobState(goblin::labnode::jobStateName(state));
        QVERIFY(parsed.has_value());
        QCOMPARE(*parsed, state);
    }
    QCOMPARE(goblin::labnode::jobStateName(JobState::Cancelled), std::string_view("cancelled"));
}

void TestJobState::unknownNamesAreRefused() {
    QVERIFY(!parseJobState("").has_value());
    QVERIFY(!parseJobState("Running").has_value());
    QVERIFY(!parseJobState("purged").has_value());
}

void TestJobState::aRunningJobEndsOneWay() {
    for (JobState end : {JobState::Done, JobState::Failed, JobState::Cancelled}) {
        QVERIFY(mayChange(JobState::Running, end));
        QVERIFY(goblin::labnode::hasEnded(end));
    }
    QVERIFY(!goblin::labnode::hasEnded(JobState::Running));
    QVERIFY(!mayChange(JobState::Running, JobState::Released));
    QVERIFY(!mayChange(JobState::Done, JobState::Failed));
    QVERIFY(!mayChange(JobState::Cancelled, JobState::Done));
}

void TestJobState::anEndedJobIsReleasedOrRetained() {
    for (JobState end : {JobState::Done, JobState::Failed, JobState::Cancelled}) {
        QVERIFY(mayChange(end, JobState::Released));
        QVERIFY(mayChange(end, JobState::Retained));
    }
    QVERIFY(mayChange(JobState::Retained, JobState::Released));
    QVERIFY(!mayChange(JobState::Released, JobState::Retained));
}

void TestJobState::nothingRunsAgain() {
    for (JobState from : {JobState::Done, JobState::Failed, JobState::Cancelled, JobState::Retained,
                          JobState::Released})
        QVERIFY(!mayChange(from, JobState::Running));
}

QTEST_APPLESS_MAIN(TestJobState)
#include "test_job_state.moc"
