// Tests of the task states and their one transition table (mayTransition): every move the task
// engine (work/task_graph.cpp) makes is allowed, every other pair of states is refused, and each
// state has its own name. The expected table is written out here from what each TaskGraph
// operation does, not copied from task_state.cpp.
#include <QtTest/QtTest>

#include <array>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "work/task_state.hpp"

using goblin::labnode::mayTransition;
using goblin::labnode::TaskState;
using goblin::labnode::taskStateName;

namespace {

using S = TaskState;
using Move = std::pair<TaskState, TaskState>;

constexpr std::array<TaskState, 6> kAllStates{S::Waiting,  S::Queued,  S::Leased,
                                              S::Deciding, S::Decided, S::Cancelled};

// The moves the engine makes, by the TaskGraph operation that makes them.
const std::set<Move>& allowedMoves() {
    static const std::set<Move> kAllowed{
        // add / decide / redoDependents: the last dependency is decided.
        {S::Waiting, S::Queued},
        // lease (the last wanted opinion) and stopWanting.
        {S::Queued, S::Leased},
        // takeForDecision: the node computes a queued or leased task; startDeciding: a result
        // arrived for a leased one.
        {S::Queued, S::Deciding},
        {S::Leased, S::Deciding},
        // requeue / want: the lease was lost or the result rejected.
        {S::Leased, S::Queued},
        {S::Deciding, S::Queued},
        // callOff: the decision is called off, the task is judged again.
        {S::Deciding, S::Leased},
        // decide: the result is accepted.
        {S::Deciding, S::Decided},
        // reopen: a volunteer of a decided task was caught after the fact.
        {S::Decided, S::Queued},
        // sendDependentsBack: a dependency was reopened.
        {S::Queued, S::Waiting},
        {S::Leased, S::Waiting},
        {S::Deciding, S::Waiting},
        {S::Decided, S::Waiting},
        // cancelJob: every task not cancelled yet.
        {S::Waiting, S::Cancelled},
        {S::Queued, S::Cancelled},
        {S::Leased, S::Cancelled},
        {S::Deciding, S::Cancelled},
        {S::Decided, S::Cancelled},
    };
    return kAllowed;
}

std::string describe(TaskState from, TaskState to) {
    return std::string(taskStateName(from)) + " -> " + std::string(taskStateName(to));
}

// Names of the states `from` may move to, in declaration order (QCOMPARE prints lists).
QStringList targetsOf(TaskState from) {
    QStringList targets;
    for (TaskState to : kAllStates)
        if (mayTransition(from, to))
            targets << QString::fromUtf8(taskStateName(to).data(), taskStateName(to).size());
    return targets;
}

QStringList sourcesOf(TaskState to) {
    QStringList sources;
    for (TaskState from : kAllStates)
        if (mayTransition(from, to))
            sources << QString::fromUtf8(taskStateName(from).data(), taskStateName(from).size());
    return sources;
}

} // namespace

class TestTaskState : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void everyMoveTheEngineMakesIsAllowed();
    void everyOtherPairOfStatesIsRefused();
    void noStateMovesToItself();
    void aCancelledTaskNeverMovesAgain();
    void everyOtherStateMayBeCancelled();
    void aWaitingTaskOnlyBecomesQueuedOrIsCancelled();
    void onlyADecidingTaskBecomesDecided();
    void aDecidedTaskOnlyMovesWhenReopenedOrCancelled();
    void noTaskGoesBackToLeasedExceptFromQueuedOrACalledOffDecision();
    void everyStateHasADistinctNonEmptyName();
};

void TestTaskState::everyMoveTheEngineMakesIsAllowed() {
    QCOMPARE(allowedMoves().size(), std::size_t{18});
    for (const auto& [from, to] : allowedMoves())
        QVERIFY2(mayTransition(from, to), describe(from, to).c_str());
}

void TestTaskState::everyOtherPairOfStatesIsRefused() {
    int refused = 0;
    for (TaskState from : kAllStates) {
        for (TaskState to : kAllStates) {
            if (allowedMoves().contains(Move{from, to}))
                continue;
            QVERIFY2(!mayTransition(from, to), describe(from, to).c_str());
            ++refused;
        }
    }
    QCOMPARE(refused, 36 - 18);
}

void TestTaskState::noStateMovesToItself() {
    for (TaskState state : kAllStates)
        QVERIFY2(!mayTransition(state, state), describe(state, state).c_str());
}

void TestTaskState::aCancelledTaskNeverMovesAgain() {
    QCOMPARE(targetsOf(S::Cancelled), QStringList{});
}

void TestTaskState::everyOtherStateMayBeCancelled() {
    for (TaskState state : kAllStates) {
        if (state == S::Cancelled)
            continue;
        QVERIFY2(mayTransition(state, S::Cancelled), describe(state, S::Cancelled).c_str());
    }
}

void TestTaskState::aWaitingTaskOnlyBecomesQueuedOrIsCancelled() {
    QCOMPARE(targetsOf(S::Waiting), (QStringList{"queued", "cancelled"}));
}

void TestTaskState::onlyADecidingTaskBecomesDecided() {
    QCOMPARE(sourcesOf(S::Decided), QStringList{"deciding"});
}

void TestTaskState::aDecidedTaskOnlyMovesWhenReopenedOrCancelled() {
    // reopen queues it again, a reopened dependency sends it back to waiting, its job's end
    // cancels it; it is never leased or decided again without being queued first.
    QCOMPARE(targetsOf(S::Decided), (QStringList{"waiting", "queued", "cancelled"}));
}

void TestTaskState::noTaskGoesBackToLeasedExceptFromQueuedOrACalledOffDecision() {
    QCOMPARE(sourcesOf(S::Leased), (QStringList{"queued", "deciding"}));
}

void TestTaskState::everyStateHasADistinctNonEmptyName() {
    std::set<std::string_view> names;
    for (TaskState state : kAllStates) {
        const std::string_view name = taskStateName(state);
        QVERIFY(!name.empty());
        QVERIFY2(name != "unknown", "a state falls through the switch");
        names.insert(name);
    }
    QCOMPARE(names.size(), kAllStates.size());
}

QTEST_APPLESS_MAIN(TestTaskState)
#include "test_task_state.moc"
