// Tests of GroupOwner, the training job that owns a group of graph tasks: whether a group is
// owned, the note log lines add after the group's id, and the refusal that tells a user acting on
// the group itself which training job to act on instead.
#include <QtTest/QtTest>

#include <string>
#include <string_view>

#include "work/group_owner.hpp"

using goblin::Error;
using goblin::ErrorCode;
using goblin::labnode::GroupOwner;

namespace {

bool contains(const std::string& text, std::string_view part) {
    return text.find(part) != std::string::npos;
}

} // namespace

class TestGroupOwner : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aDefaultOwnerOwnsNothingAndAddsNothingToLogLines();
    void anOwnerWithATrainingJobOwnsTheGroup();
    void describeNamesTheRoundAndTheTrainingJob();
    void theRefusalNamesTheGroupTheRoundTheTrainingJobAndTheAction();
    void theRefusalIsInvalidInputForEveryAction();
};

void TestGroupOwner::aDefaultOwnerOwnsNothingAndAddsNothingToLogLines() {
    const GroupOwner none;
    QVERIFY(!none.owned());
    QCOMPARE(none.describe(), std::string());
    const GroupOwner roundOnly{"", 4};
    QVERIFY2(!roundOnly.owned(), "a round without a job owns the group");
    QCOMPARE(roundOnly.describe(), std::string());
}

void TestGroupOwner::anOwnerWithATrainingJobOwnsTheGroup() {
    QVERIFY((GroupOwner{"train-7", 0}.owned()));
    QVERIFY((GroupOwner{"train-7", 12}.owned()));
}

void TestGroupOwner::describeNamesTheRoundAndTheTrainingJob() {
    const GroupOwner owner{"train-7", 37};
    const std::string described = owner.describe();
    QVERIFY2(contains(described, "round 37"), described.c_str());
    QVERIFY2(contains(described, "training job train-7"), described.c_str());
    // The form the header documents, for log lines after the group's id.
    QCOMPARE(described, std::string(" (round 37 of training job train-7)"));
}

void TestGroupOwner::theRefusalNamesTheGroupTheRoundTheTrainingJobAndTheAction() {
    const GroupOwner owner{"train-7", 37};
    const Error refused = owner.refusal("graph-91", "cancel");
    const std::string& message = refused.message;
    QCOMPARE(refused.code, ErrorCode::InvalidInput);
    QVERIFY2(contains(message, "graph-91"), message.c_str());
    QVERIFY2(contains(message, "round 37"), message.c_str());
    QVERIFY2(contains(message, "train-7"), message.c_str());
    QVERIFY2(contains(message, "cancel the training job"), message.c_str());
}

void TestGroupOwner::theRefusalIsInvalidInputForEveryAction() {
    const GroupOwner owner{"train-2", 1};
    for (std::string_view action : {"fetch", "release", "cancel", "purge"}) {
        const Error refused = owner.refusal("graph-5", action);
        QCOMPARE(refused.code, ErrorCode::InvalidInput);
        QVERIFY2(contains(refused.message, action), refused.message.c_str());
        QVERIFY2(contains(refused.message, "train-2"), refused.message.c_str());
        QVERIFY2(contains(refused.message, "graph-5"), refused.message.c_str());
    }
}

QTEST_APPLESS_MAIN(TestGroupOwner)
#include "test_group_owner.moc"
