// Tests of StepTasks, a training job's rounds' `train-step` tasks on the task engine: each
// round's step waits on the round before's and is queued when it committed; the node takes it
// once (a second take while it is taken is refused) and deciding it plans the next round's step,
// none past the last round; a rewind reopens the round's step and sends the later ones back to
// waiting, and training on makes them ready again rather than planning new ones; a running job's
// chain that does not agree with its committed rounds (a restart, a job loaded again) is rebuilt
// from them; a failed or cancelled job's steps are cancelled and never taken, until it trains
// again; a step waits on its round's group's merge (a task of the graph kind on the same engine),
// the latest group's alone, and on the merge that replaces it when the group is planned again.
#include <QtTest/QtTest>

#include <cstdint>
#include <string>
#include <vector>

#include "kinds/train/step_tasks.hpp"

using namespace goblin::labnode;

namespace {

TrainingJob jobOf(std::int64_t rounds, std::int64_t roundsDone = 0) {
    TrainingJob job;
    job.id = "t-1";
    job.submission.plan.rounds = rounds;
    job.roundsDone = roundsDone;
    return job;
}

// The steps' states in round order, as "decided queued waiting".
std::string statesOf(StepTasks& steps, const TrainingJob& job) {
    std::string states;
    for (const Task* step : steps.stepsOf(job)) {
        if (!states.empty())
            states += ' ';
        states += step ? std::string(taskStateName(step->state)) : "missing";
    }
    return states;
}

// The node takes the job's next step and the round commits.
void commitRound(StepTasks& steps, TrainingJob& job) {
    QVERIFY(steps.take(job, "its group is done"));
    steps.decide(job, "committed");
    ++job.roundsDone;
}

} // namespace

class TestStepTasks : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void eachStepWaitsOnTheRoundBeforeAndIsDecidedWhenItsRoundCommits();
    void aStepBeingTakenIsNotTakenTwice();
    void aRewindReopensTheRoundsStepAndTheLaterOnesWaitAgain();
    void aChainThatDisagreesWithTheCommittedRoundsIsRebuiltFromThem();
    void aFailedOrCancelledJobsStepsAreCancelledAndNeverTaken();
    void aStepWaitsOnItsRoundsGroupMerge();
};

void TestStepTasks::eachStepWaitsOnTheRoundBeforeAndIsDecidedWhenItsRoundCommits() {
    TaskGraph engine;
    StepTasks steps{engine};
    TrainingJob job = jobOf(3);
    QCOMPARE(statesOf(steps, job), std::string("queued"));
    QVERIFY(!steps.taking(job));
    QVERIFY(steps.take(job, "its group is done"));
    QVERIFY(steps.taking(job));
    QCOMPARE(statesOf(steps, job), std::string("deciding"));
    steps.decide(job, "round 0 committed");
    ++job.roundsDone;
    QVERIFY(!steps.taking(job));
    QCOMPARE(statesOf(steps, job), std::string("decided queued"));
    commitRound(steps, job);
    commitRound(steps, job);
    // None is planned past the last round.
    QCOMPARE(statesOf(steps, job), std::string("decided decided decided"));
    const std::vector<const Task*> chain = steps.stepsOf(job);
    QCOMPARE(chain.front()->dependencies.size(), std::size_t{0});
    for (std::size_t round = 1; round < chain.size(); ++round)
        QCOMPARE(chain[round]->dependencies, std::vector<std::int64_t>{chain[round - 1]->id});
    for (const Task* step : chain)
        QCOMPARE(step->type, std::string(StepTasks::kTaskType));
    // The story names each cause: planned, queued, taken, decided.
    const std::vector<Transition>& story = chain[1]->story;
    QVERIFY(story.size() >= 4);
    QCOMPARE(story[0].cause, std::string("the round before committed"));
    QCOMPARE(story[2].cause, std::string("its group is done"));
    QCOMPARE(story.back().to, TaskState::Decided);
    QCOMPARE(story.back().cause, std::string("committed"));
}

void TestStepTasks::aStepBeingTakenIsNotTakenTwice() {
    TaskGraph engine;
    StepTasks steps{engine};
    TrainingJob job = jobOf(2);
    QVERIFY(steps.take(job, "its group is done"));
    QVERIFY(!steps.take(job, "its group is done, said twice"));
    QCOMPARE(statesOf(steps, job), std::string("deciding"));
    // A commit that cannot be written keeps it taken: nothing else takes it meanwhile.
    QVERIFY(steps.taking(job));
    steps.decide(job, "committed");
    ++job.roundsDone;
    QVERIFY(steps.take(job, "the next group is done"));
}

void TestStepTasks::aRewindReopensTheRoundsStepAndTheLaterOnesWaitAgain() {
    TaskGraph engine;
    StepTasks steps{engine};
    TrainingJob job = jobOf(4);
    for (int round = 0; round < 3; ++round)
        commitRound(steps, job);
    QVERIFY(steps.take(job, "round 3's group is done"));
    const std::vector<const Task*> before = steps.stepsOf(job);
    QCOMPARE(statesOf(steps, job), std::string("decided decided decided deciding"));
    // Round 1 was found poisoned: it and everything after it is trained again.
    steps.reopen(job, 1, "round 1 was corrected");
    job.roundsDone = 1;
    QCOMPARE(statesOf(steps, job), std::string("decided queued waiting waiting"));
    QVERIFY(!steps.taking(job));
    commitRound(steps, job);
    // The same tasks come back, not new ones.
    QCOMPARE(statesOf(steps, job), std::string("decided decided queued waiting"));
    const std::vector<const Task*> after = steps.stepsOf(job);
    QCOMPARE(after.size(), before.size());
    for (std::size_t round = 0; round < after.size(); ++round)
        QCOMPARE(after[round]->id, before[round]->id);
    commitRound(steps, job);
    commitRound(steps, job);
    QCOMPARE(statesOf(steps, job), std::string("decided decided decided decided"));
    QCOMPARE(steps.stepsOf(job).size(), std::size_t{4});
    // A rewind past the committed rounds changes nothing.
    steps.reopen(job, 4, "not a committed round");
    steps.reopen(job, -1, "not a round");
    QCOMPARE(statesOf(steps, job), std::string("decided decided decided decided"));
}

void TestStepTasks::aChainThatDisagreesWithTheCommittedRoundsIsRebuiltFromThem() {
    TaskGraph engine;
    StepTasks restarted{engine};
    TrainingJob job = jobOf(4, 2); // two rounds committed before the node restarted
    QCOMPARE(statesOf(restarted, job), std::string("decided decided queued"));
    QCOMPARE(restarted.stepsOf(job).back()->story.front().cause,
             std::string("reloaded: the next round to train"));
    commitRound(restarted, job);
    QCOMPARE(statesOf(restarted, job), std::string("decided decided decided queued"));
    // Loaded again with fewer rounds committed (its rewind was recorded, say): rebuilt.
    job.roundsDone = 1;
    QCOMPARE(statesOf(restarted, job), std::string("decided queued"));
    // Forgotten, then loaded done: every step decided, none queued.
    restarted.forget(job.id);
    job.roundsDone = 4;
    QCOMPARE(statesOf(restarted, job), std::string("decided decided decided decided"));
    QVERIFY(!restarted.take(job, "no round is left"));
}

void TestStepTasks::aFailedOrCancelledJobsStepsAreCancelledAndNeverTaken() {
    TaskGraph engine;
    StepTasks steps{engine};
    TrainingJob job = jobOf(3);
    commitRound(steps, job);
    QVERIFY(steps.take(job, "its group is done"));
    job.state = JobState::Cancelled;
    steps.cancel(job.id, "the job was cancelled");
    QCOMPARE(statesOf(steps, job), std::string("cancelled cancelled"));
    QCOMPARE(steps.stepsOf(job).back()->story.back().cause, std::string("the job was cancelled"));
    QVERIFY(!steps.take(job, "its group is done, after the cancel"));
    QVERIFY(!steps.taking(job));
    // A job that ended and trains again (a late catch) gets its chain back from its rounds.
    job.state = JobState::Running;
    QCOMPARE(statesOf(steps, job), std::string("decided queued"));
    QVERIFY(steps.take(job, "its group is done, trained again"));

    TaskGraph otherEngine;
    StepTasks other{otherEngine};
    TrainingJob failing = jobOf(2);
    QVERIFY(other.take(failing, "its group is done"));
    other.cancel(failing.id, "the job failed");
    failing.state = JobState::Failed;
    QCOMPARE(statesOf(other, failing), std::string("cancelled"));
    QVERIFY(!other.take(failing, "its group is done, after the failure"));
}

void TestStepTasks::aStepWaitsOnItsRoundsGroupMerge() {
    TaskGraph engine; // the graph kind's, where a group's merge lives
    StepTasks steps{engine};
    TrainingJob job = jobOf(3);
    auto addMerge = [&](const std::string& group) {
        const std::int64_t id = engine.nodeTaskId();
        engine.add(TaskSpec{.id = id,
                            .job = group,
                            .type = "graph-merge",
                            .dependencies = {},
                            .attempt = 0,
                            .opinions = 1},
                   "planned");
        return id;
    };
    auto merge = [&](std::int64_t id) {
        QVERIFY(engine.takeForDecision(id, "merging"));
        engine.decide(id, "merged");
    };
    const std::int64_t first = addMerge("g-1");
    steps.waitOnGroup(job, first, "round 0 runs as group g-1");
    QCOMPARE(statesOf(steps, job), std::string("waiting"));
    QVERIFY(!steps.take(job, "too soon: the group is not merged")); // the engine's edge holds it
    QCOMPARE(statesOf(steps, job), std::string("waiting"));
    merge(first);
    QCOMPARE(statesOf(steps, job), std::string("queued"));
    commitRound(steps, job);

    // Round 1 runs as group g-2, which is then dropped and run again as g-3 (a rewind's new
    // group): the step waits on the round before's step and on g-3's merge alone.
    const std::int64_t dropped = addMerge("g-2");
    steps.waitOnGroup(job, dropped, "round 1 runs as group g-2");
    const std::int64_t again = addMerge("g-3");
    steps.waitOnGroup(job, again, "round 1 runs as group g-3");
    const Task* step = steps.stepsOf(job).back();
    QCOMPARE(step->dependencies,
             (std::vector<std::int64_t>{steps.stepsOf(job).front()->id, again}));
    merge(dropped);
    QCOMPARE(statesOf(steps, job), std::string("decided waiting")); // not rebuilt, still waiting
    QCOMPARE(steps.stepsOf(job).back(), step);

    // g-3 is planned again as g-4 (the graph kind's replan): the step waits on g-4's merge.
    const std::vector<std::int64_t> waiting = engine.task(again)->dependents;
    QCOMPARE(waiting, std::vector<std::int64_t>{step->id});
    engine.removeJob("g-3");
    const std::int64_t replanned = addMerge("g-4");
    engine.redirect(waiting, again, replanned, "its group g-3 was planned again");
    QCOMPARE(step->dependencies.back(), replanned);
    QCOMPARE(statesOf(steps, job), std::string("decided waiting"));
    merge(replanned);
    QCOMPARE(statesOf(steps, job), std::string("decided queued"));
    QCOMPARE(step->story.back().cause,
             "its last dependency, task " + std::to_string(replanned) + ", was decided");
    commitRound(steps, job);
    // A group that is merged before its step waits on it holds nothing.
    const std::int64_t early = addMerge("g-5");
    merge(early);
    steps.waitOnGroup(job, early, "round 2 runs as group g-5");
    QCOMPARE(statesOf(steps, job), std::string("decided decided queued"));
    commitRound(steps, job);
    QCOMPARE(statesOf(steps, job), std::string("decided decided decided"));
}

QTEST_APPLESS_MAIN(TestStepTasks)
#include "test_step_tasks.moc"
