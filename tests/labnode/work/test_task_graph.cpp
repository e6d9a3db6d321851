// Tests of TaskGraph, the kind-independent task engine: readiness by dependencies, leases and
// attempts, deciding, reopening (a rejected dependency is recomputed before its dependents run
// again), cancelling, and the story of every transition.
#include <QtTest/QtTest>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "work/task_graph.hpp"

using goblin::labnode::LeasedTask;
using goblin::labnode::QueuePlace;
using goblin::labnode::Reloaded;
using goblin::labnode::Task;
using goblin::labnode::TaskGraph;
using goblin::labnode::TaskSpec;
using goblin::labnode::TaskState;

namespace {

using Ids = std::vector<std::int64_t>;

void add(TaskGraph& graph, std::int64_t id, Ids dependencies = {}, const std::string& job = "j-1") {
    graph.add(TaskSpec{id, job, "tile", std::move(dependencies)}, "planned");
}

std::optional<LeasedTask> leaseAny(TaskGraph& graph) {
    return graph.lease([](const Task&) { return true; }, "a volunteer asked");
}

// Leases everything queued now, in order.
Ids drain(TaskGraph& graph) {
    Ids ids;
    while (auto leased = leaseAny(graph))
        ids.push_back(leased->task);
    return ids;
}

// Leases `id` (which must be first in the queue) and accepts its result.
void computeAndAccept(TaskGraph& graph, std::int64_t id) {
    auto leased = leaseAny(graph);
    QVERIFY(leased.has_value());
    QCOMPARE(leased->task, id);
    QVERIFY(graph.startDeciding(id, "result"));
    graph.decide(id, "accepted");
}

} // namespace

class TestTaskGraph : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void tasksWithoutDependenciesQueueInOrder();
    void aTaskIsQueuedOnlyWhenEveryDependencyIsDecided();
    void leasesCountAttemptsAndRequeueChoosesItsPlace();
    void leaseSkipsTasksTheFilterRefuses();
    void onlyALeasedTaskStartsDeciding();
    void theNodeTakesQueuedOrLeasedTasksOnly();
    void aRejectedDependencyIsLeasedAgainBeforeItsDependent();
    void reopeningSendsEveryDependentBackToWaiting();
    void aReplacedOutputRedoesEveryDependentButNotTheTaskItself();
    void reloadedDecidedTasksReleaseTheirDependents();
    void cancellingAJobEndsEveryTaskAndEmptiesTheQueue();
    void removingAJobForgetsItsTasks();
    void theStoryRecordsEveryTransitionWithItsCause();
    void theTransitionTableRefusesWhatNoStimulusCauses();
    void aTaskOfReplicasStaysQueuedUntilEveryOpinionIsLeased();
    void opinionsWantedAgainQueueItOnceAndStopWantingLeavesTheLeases();
    void aCalledOffDecisionIsJudgedAgainAndADependentWaitsForTheReplicas();
    void aTaskNotTakenYetIsPlannedAgainOnOtherDependencies();
};

void TestTaskGraph::tasksWithoutDependenciesQueueInOrder() {
    TaskGraph graph;
    QVERIFY(!graph.hasQueued());
    for (std::int64_t id : {4, 2, 7})
        add(graph, id);
    QVERIFY(graph.hasQueued());
    QCOMPARE(graph.taskCount("j-1"), std::int64_t{3});
    QCOMPARE(drain(graph), (Ids{4, 2, 7}));
    QVERIFY(!graph.hasQueued());
    QCOMPARE(graph.state(2), TaskState::Leased);
}

void TestTaskGraph::aTaskIsQueuedOnlyWhenEveryDependencyIsDecided() {
    TaskGraph graph;
    add(graph, 1);
    add(graph, 2);
    add(graph, 3, {1, 2});
    QCOMPARE(graph.state(3), TaskState::Waiting);
    QCOMPARE(drain(graph), (Ids{1, 2}));
    QVERIFY(graph.startDeciding(1, "result"));
    QCOMPARE(graph.decide(1, "accepted"), Ids{});
    QCOMPARE(graph.state(3), TaskState::Waiting);
    QVERIFY(!graph.hasQueued());
    QVERIFY(graph.startDeciding(2, "result"));
    QCOMPARE(graph.decide(2, "accepted"), Ids{3});
    QCOMPARE(graph.state(3), TaskState::Queued);
    QCOMPARE(drain(graph), Ids{3});
    QCOMPARE(graph.decidedCount("j-1"), std::int64_t{2});
}

void TestTaskGraph::leasesCountAttemptsAndRequeueChoosesItsPlace() {
    TaskGraph graph;
    add(graph, 1);
    add(graph, 2);
    add(graph, 3);
    auto first = leaseAny(graph);
    QCOMPARE(first->task, std::int64_t{1});
    QCOMPARE(first->attempt, std::int64_t{1});
    QVERIFY(graph.requeue(1, QueuePlace::Front, "lease expired"));
    QVERIFY(!graph.requeue(1, QueuePlace::Front, "again")); // queued already: left alone
    auto again = leaseAny(graph);
    QCOMPARE(again->task, std::int64_t{1});
    QCOMPARE(again->attempt, std::int64_t{2});
    QVERIFY(graph.requeue(1, QueuePlace::Back, "rejected"));
    QCOMPARE(drain(graph), (Ids{2, 3, 1}));
    QCOMPARE(graph.task(1)->attempt, std::int64_t{3});
}

void TestTaskGraph::leaseSkipsTasksTheFilterRefuses() {
    TaskGraph graph;
    add(graph, 1);
    add(graph, 2);
    auto leased = graph.lease([](const Task& task) { return task.id != 1; }, "asked");
    QCOMPARE(leased->task, std::int64_t{2});
    QCOMPARE(graph.state(1), TaskState::Queued);
    QVERIFY(!graph.lease([](const Task&) { return false; }, "asked"));
    QVERIFY(graph.hasQueued());
}

void TestTaskGraph::onlyALeasedTaskStartsDeciding() {
    TaskGraph graph;
    add(graph, 1);
    add(graph, 2, {1});
    QVERIFY(!graph.startDeciding(1, "a result nobody leased")); // queued
    QVERIFY(!graph.startDeciding(2, "a result for a waiting task"));
    QVERIFY(!graph.startDeciding(99, "unknown"));
    computeAndAccept(graph, 1);
    QVERIFY(!graph.startDeciding(1, "a second result")); // decided
    QCOMPARE(graph.state(1), TaskState::Decided);
}

void TestTaskGraph::theNodeTakesQueuedOrLeasedTasksOnly() {
    TaskGraph graph;
    add(graph, 1);
    add(graph, 2);
    add(graph, 3, {1});
    QVERIFY(graph.takeForDecision(1, "volunteers gave up"));
    QCOMPARE(graph.state(1), TaskState::Deciding);
    QCOMPARE(drain(graph), Ids{2}); // 1 left the queue
    QVERIFY(graph.takeForDecision(2, "volunteers gave up"));
    QVERIFY(!graph.takeForDecision(3, "waiting"));
    QVERIFY(!graph.takeForDecision(1, "deciding already"));
}

void TestTaskGraph::aRejectedDependencyIsLeasedAgainBeforeItsDependent() {
    TaskGraph graph;
    add(graph, 1);
    add(graph, 2, {1});
    computeAndAccept(graph, 1);
    QCOMPARE(graph.state(2), TaskState::Queued);
    // Task 1's volunteer is caught: its output is no longer trusted.
    QCOMPARE(graph.reopen(1, "its volunteer was quarantined"), Ids{2});
    QCOMPARE(graph.state(2), TaskState::Waiting);
    // Only the dependency can be leased; its recomputation is rejected once.
    auto retry = leaseAny(graph);
    QCOMPARE(retry->task, std::int64_t{1});
    QVERIFY(!leaseAny(graph));
    QVERIFY(graph.startDeciding(1, "result"));
    QVERIFY(graph.requeue(1, QueuePlace::Front, "rejected"));
    QCOMPARE(graph.state(2), TaskState::Waiting);
    auto second = leaseAny(graph);
    QCOMPARE(second->task, std::int64_t{1});
    QVERIFY(!leaseAny(graph));
    QVERIFY(graph.startDeciding(1, "result"));
    QCOMPARE(graph.decide(1, "accepted"), Ids{2});
    // Only now the dependent runs.
    auto dependent = leaseAny(graph);
    QCOMPARE(dependent->task, std::int64_t{2});
}

void TestTaskGraph::reopeningSendsEveryDependentBackToWaiting() {
    TaskGraph graph;
    add(graph, 1);
    add(graph, 2, {1});
    add(graph, 3, {2});
    add(graph, 4, {1}, "j-2");
    computeAndAccept(graph, 1);
    computeAndAccept(graph, 2);
    auto leased4 = leaseAny(graph); // 4 then 3 are queued: 4 first
    QCOMPARE(leased4->task, std::int64_t{4});
    computeAndAccept(graph, 3);
    QCOMPARE(graph.decidedCount("j-1"), std::int64_t{3});
    const Ids affected = graph.reopen(1, "late catch");
    QCOMPARE(affected.size(), std::size_t{3});
    for (std::int64_t id : {2, 3, 4})
        QCOMPARE(graph.state(id), TaskState::Waiting);
    QCOMPARE(graph.decidedCount("j-1"), std::int64_t{0});
    QCOMPARE(drain(graph), Ids{1});
    QVERIFY(graph.startDeciding(1, "result"));
    QCOMPARE(graph.decide(1, "accepted"), (Ids{2, 4}));
    QCOMPARE(graph.state(3), TaskState::Waiting); // 2 must be decided again first
}

// 1 → 2 → 3 and 1 → 4, with 5 waiting on 1 and on 6 (not decided): after 1's output is replaced,
// 1 stays decided, 2 and 4 are queued first, 3 waits for 2 and 5 still waits for 6.
void TestTaskGraph::aReplacedOutputRedoesEveryDependentButNotTheTaskItself() {
    TaskGraph graph;
    add(graph, 1);
    add(graph, 6);
    add(graph, 2, {1});
    add(graph, 3, {2});
    add(graph, 4, {1});
    add(graph, 5, {1, 6});
    add(graph, 7);
    computeAndAccept(graph, 1);
    auto leased6 = leaseAny(graph); // 6 stays leased: 5 keeps waiting on it
    QCOMPARE(leased6->task, std::int64_t{6});
    computeAndAccept(graph, 7);
    computeAndAccept(graph, 2);
    auto leased4 = leaseAny(graph);
    QCOMPARE(leased4->task, std::int64_t{4});
    QCOMPARE(graph.state(3), TaskState::Queued);
    const Ids affected = graph.redoDependents(1, "the node replaced its output");
    QCOMPARE(affected.size(), std::size_t{3}); // 2, 3 and 4 (5 was waiting already)
    QCOMPARE(graph.state(1), TaskState::Decided);
    QCOMPARE(graph.state(3), TaskState::Waiting);
    QCOMPARE(graph.state(5), TaskState::Waiting);
    QCOMPARE(graph.decidedCount("j-1"), std::int64_t{2}); // 1 and 7
    QCOMPARE(drain(graph), (Ids{4, 2}));
    QVERIFY(graph.startDeciding(2, "result"));
    QCOMPARE(graph.decide(2, "accepted"), Ids{3});
    QVERIFY(graph.startDeciding(6, "result"));
    QCOMPARE(graph.decide(6, "accepted"), Ids{5});
}

void TestTaskGraph::reloadedDecidedTasksReleaseTheirDependents() {
    TaskGraph graph;
    graph.add(TaskSpec{1, "j-1", "tile", {}}, "reloaded", Reloaded::Decided);
    graph.add(TaskSpec{2, "j-1", "tile", {1}}, "reloaded");
    QCOMPARE(graph.state(1), TaskState::Decided);
    QCOMPARE(graph.decidedCount("j-1"), std::int64_t{1});
    QCOMPARE(drain(graph), Ids{2});
}

void TestTaskGraph::cancellingAJobEndsEveryTaskAndEmptiesTheQueue() {
    TaskGraph graph;
    add(graph, 1);
    add(graph, 2);
    add(graph, 3, {1});
    add(graph, 4, {}, "j-2");
    QVERIFY(leaseAny(graph).has_value());
    graph.cancelJob("j-1", "the researcher cancelled");
    for (std::int64_t id : {1, 2, 3})
        QCOMPARE(graph.state(id), TaskState::Cancelled);
    QCOMPARE(drain(graph), Ids{4});
    QVERIFY(!graph.requeue(1, QueuePlace::Front, "a late lease loss"));
    QVERIFY(!graph.startDeciding(1, "a late result"));
}

void TestTaskGraph::removingAJobForgetsItsTasks() {
    TaskGraph graph;
    add(graph, 1);
    add(graph, 2, {}, "j-2");
    graph.removeJob("j-1");
    QVERIFY(graph.task(1) == nullptr);
    QCOMPARE(graph.state(1), TaskState::Cancelled);
    QCOMPARE(graph.taskCount("j-1"), std::int64_t{0});
    QCOMPARE(drain(graph), Ids{2});
}

void TestTaskGraph::theStoryRecordsEveryTransitionWithItsCause() {
    TaskGraph graph;
    add(graph, 1);
    auto leased = leaseAny(graph);
    QVERIFY(graph.requeue(1, QueuePlace::Front, "lease expired"));
    leased = leaseAny(graph);
    QVERIFY(graph.startDeciding(1, "result"));
    graph.decide(1, "freivalds accepted");
    const auto& story = graph.story(1);
    const std::vector<std::pair<TaskState, TaskState>> moves{
        {TaskState::Waiting, TaskState::Waiting},  {TaskState::Waiting, TaskState::Queued},
        {TaskState::Queued, TaskState::Leased},    {TaskState::Leased, TaskState::Queued},
        {TaskState::Queued, TaskState::Leased},    {TaskState::Leased, TaskState::Deciding},
        {TaskState::Deciding, TaskState::Decided},
    };
    QCOMPARE(story.size(), moves.size());
    for (std::size_t i = 0; i < moves.size(); ++i) {
        QCOMPARE(story[i].from, moves[i].first);
        QCOMPARE(story[i].to, moves[i].second);
    }
    QCOMPARE(story.front().cause, std::string("planned"));
    QCOMPARE(story[3].cause, std::string("lease expired"));
    QCOMPARE(story[3].attempt, std::int64_t{1});
    QCOMPARE(story.back().cause, std::string("freivalds accepted"));
    QCOMPARE(story.back().attempt, std::int64_t{2});
    QVERIFY(graph.story(42).empty());
}

void TestTaskGraph::theTransitionTableRefusesWhatNoStimulusCauses() {
    using goblin::labnode::mayTransition;
    QVERIFY(mayTransition(TaskState::Queued, TaskState::Leased));
    QVERIFY(mayTransition(TaskState::Decided, TaskState::Queued));
    QVERIFY(!mayTransition(TaskState::Waiting, TaskState::Leased));
    QVERIFY(!mayTransition(TaskState::Queued, TaskState::Decided));
    QVERIFY(!mayTransition(TaskState::Leased, TaskState::Decided));
    for (TaskState to : {TaskState::Waiting, TaskState::Queued, TaskState::Leased,
                         TaskState::Deciding, TaskState::Decided})
        QVERIFY(!mayTransition(TaskState::Cancelled, to));
    QCOMPARE(goblin::labnode::taskStateName(TaskState::Deciding), std::string_view("deciding"));
}

void TestTaskGraph::aTaskOfReplicasStaysQueuedUntilEveryOpinionIsLeased() {
    TaskGraph graph;
    graph.add(TaskSpec{1, "j-1", "graph-op", {}, 0, 2}, "planned");
    add(graph, 2);
    // Two volunteers take the two opinions; a third finds only the other task.
    auto first = graph.lease([](const Task& t) { return t.id == 1; }, "volunteer a");
    QVERIFY(first.has_value());
    QCOMPARE(graph.state(1), TaskState::Queued);
    QCOMPARE(graph.task(1)->wanted, 1);
    auto second = graph.lease([](const Task& t) { return t.id == 1; }, "volunteer b");
    QVERIFY(second.has_value());
    QCOMPARE(second->attempt, first->attempt + 1); // attempt numbers never repeat
    QCOMPARE(graph.state(1), TaskState::Leased);
    QVERIFY(!graph.lease([](const Task& t) { return t.id == 1; }, "volunteer c"));
    QCOMPARE(drain(graph), Ids{2});
    // Both results are in and agree: the node takes it to decide.
    QVERIFY(graph.takeForDecision(1, "the replicas agree"));
    graph.decide(1, "recorded");
    QCOMPARE(graph.decidedCount("j-1"), std::int64_t{1});
}

void TestTaskGraph::opinionsWantedAgainQueueItOnceAndStopWantingLeavesTheLeases() {
    TaskGraph graph;
    graph.add(TaskSpec{1, "j-1", "graph-op", {}, 0, 2}, "planned");
    QVERIFY(leaseAny(graph).has_value());
    // A lease is lost while the other opinion still waits: the task wants two, queued once.
    QVERIFY(graph.want(1, QueuePlace::Back, "lease lost"));
    QCOMPARE(graph.state(1), TaskState::Queued);
    QCOMPARE(graph.task(1)->wanted, 2);
    QCOMPARE(drain(graph), (Ids{1, 1}));
    QCOMPARE(graph.state(1), TaskState::Leased);
    // A replica is rejected: one more opinion, queued again.
    QVERIFY(graph.want(1, QueuePlace::Back, "a replica was rejected"));
    QCOMPARE(graph.task(1)->wanted, 1);
    // No volunteer may take it: the node computes it; the leases out stay the scheduler's.
    QVERIFY(graph.stopWanting(1, "the node computes it"));
    QCOMPARE(graph.state(1), TaskState::Leased);
    QVERIFY(!graph.hasQueued());
    QVERIFY(!graph.stopWanting(1, "not queued"));
    QVERIFY(!graph.want(42, QueuePlace::Back, "unknown"));
}

void TestTaskGraph::aCalledOffDecisionIsJudgedAgainAndADependentWaitsForTheReplicas() {
    TaskGraph graph;
    graph.add(TaskSpec{1, "j-1", "graph-op", {}, 0, 2}, "planned");
    graph.add(TaskSpec{2, "j-1", "graph-op", {1}, 0, 2}, "planned");
    QCOMPARE(drain(graph), (Ids{1, 1}));
    QVERIFY(graph.takeForDecision(1, "the replicas agree"));
    // A volunteer of a replica was quarantined while the decision was stored.
    QVERIFY(graph.callOff(1, "a replica's volunteer was quarantined"));
    QCOMPARE(graph.state(1), TaskState::Leased);
    QVERIFY(!graph.callOff(1, "not deciding"));
    QCOMPARE(graph.state(2), TaskState::Waiting);
    QVERIFY(graph.want(1, QueuePlace::Back, "its replica was dropped"));
    QCOMPARE(drain(graph), Ids{1});
    QVERIFY(graph.takeForDecision(1, "the replicas agree"));
    QCOMPARE(graph.decide(1, "recorded"), Ids{2});
    // The dependent wants both of its opinions.
    QCOMPARE(graph.task(2)->wanted, 2);
    QCOMPARE(drain(graph), (Ids{2, 2}));
}

void TestTaskGraph::aTaskNotTakenYetIsPlannedAgainOnOtherDependencies() {
    TaskGraph graph;
    // Node tasks count down from -1, never meeting a row's id.
    const std::int64_t merge = graph.nodeTaskId();
    const std::int64_t step = graph.nodeTaskId();
    QCOMPARE(merge, std::int64_t{-1});
    QCOMPARE(step, std::int64_t{-2});
    add(graph, 1, {}, "g-1");
    add(graph, merge, {1}, "g-1");
    add(graph, step, {}, "t-1");
    QCOMPARE(graph.state(step), TaskState::Queued);
    QVERIFY(graph.hasQueued("tile"));
    QVERIFY(!graph.hasQueued("graph-merge"));
    // The queued step waits on another job's task now: out of the queue.
    QVERIFY(graph.replan(step, {merge}, "its round runs as group g-1"));
    QCOMPARE(graph.state(step), TaskState::Waiting);
    QCOMPARE(graph.task(merge)->dependents, Ids{step});
    QCOMPARE(drain(graph), Ids{1});
    QVERIFY(graph.startDeciding(1, "result"));
    graph.decide(1, "accepted");
    QVERIFY(graph.takeForDecision(merge, "merging"));
    QCOMPARE(graph.decide(merge, "merged"), Ids{step});
    QCOMPARE(graph.state(step), TaskState::Queued);

    // A queued task planned again on decided tasks stays queued; a removed one is not waited on.
    QVERIFY(graph.replan(step, {merge, 99}, "said again"));
    QCOMPARE(graph.state(step), TaskState::Queued);
    QCOMPARE(graph.task(step)->dependencies, Ids{merge});
    // Redirected to a new task: it waits on that one, and the old one no longer names it.
    const std::int64_t next = graph.nodeTaskId();
    add(graph, next, {}, "g-2");
    graph.redirect({step}, merge, next, "its group was planned again");
    QCOMPARE(graph.task(step)->dependencies, Ids{next});
    QCOMPARE(graph.state(step), TaskState::Waiting);
    QVERIFY(graph.task(merge)->dependents.empty());
    QCOMPARE(graph.story(step).back().cause, std::string("its group was planned again"));
    // A task taken already is not planned again.
    QVERIFY(graph.takeForDecision(next, "merging"));
    graph.decide(next, "merged");
    QVERIFY(graph.takeForDecision(step, "stepping"));
    QVERIFY(!graph.replan(step, {}, "too late"));
    QCOMPARE(graph.state(step), TaskState::Deciding);
    QVERIFY(!graph.replan(42, {}, "no such task"));
}

QTEST_APPLESS_MAIN(TestTaskGraph)
#include "test_task_graph.moc"
