// Tests of the graph kind's book of jobs and tasks on the task engine, for a job's merge: a task
// the node decides, waiting on every task of the job. It is queued only once they are all decided,
// taken once, never leased to a volunteer, called off back to the queue when a task it merges is
// rechecked, sent back to wait when a task is computed again, and a job loaded again whose tasks
// were all accepted has it queued. The readers of a task are graph tasks only.
#include <QtTest/QtTest>

#include <algorithm>

#include <boost/json.hpp>

#include "kinds/graph/graph_blobs.hpp"
#include "kinds/graph/graph_book.hpp"
#include "labnode/node_harness.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

constexpr std::int64_t kFirstTask = 41;

// Three tasks: chunk 1 is a stage that reads chunk 0; chunk 2 reads nothing.
GraphJob threeTasks() {
    GraphJob job;
    job.id = "g-book";
    job.chunks.resize(3);
    job.chunks[1].dependsOn = {0};
    return job;
}

std::vector<GraphTaskRow> rowsOf(std::size_t count, const std::string& accepted = {}) {
    std::vector<GraphTaskRow> rows;
    for (std::size_t chunk = 0; chunk < count; ++chunk)
        rows.push_back(GraphTaskRow{.id = kFirstTask + static_cast<std::int64_t>(chunk),
                                    .chunk = static_cast<std::int64_t>(chunk),
                                    .accepted = !accepted.empty(),
                                    .outputs = accepted,
                                    .lastAttempt = accepted.empty() ? 0 : 2});
    return rows;
}

// The node decides the task as a decider would (its opinions in): Deciding, then Decided.
bool decide(GraphBook& book, std::int64_t taskId) {
    GraphTask* task = book.task(taskId);
    if (!task || book.state(*task) != TaskState::Queued)
        return false;
    book.startDeciding(*task, "the test decides it");
    book.markDecided(*task);
    return book.decided(*task);
}

// Adds threeTasks() and decides every task; null when one could not be decided.
GraphJob* addDecided(GraphBook& book, const BlobStore& blobs) {
    GraphJob& job = book.add(threeTasks(), rowsOf(3), blobs);
    for (std::int64_t taskId : {41, 42, 43})
        if (!decide(book, taskId))
            return nullptr;
    return &job;
}

TaskState mergeState(const GraphBook& book, const GraphJob& job) {
    const Task* merge = book.mergeTaskOf(job);
    return merge ? merge->state : TaskState::Cancelled;
}

bool storyHas(const GraphBook& book, const GraphJob& job, const std::string& cause) {
    const Task* merge = book.mergeTaskOf(job);
    return merge && std::any_of(merge->story.begin(), merge->story.end(),
                                [&](const Transition& step) { return step.cause == cause; });
}

} // namespace

class TestGraphBook : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void theMergeWaitsOnEveryTaskAndIsTakenOnce();
    void theMergeIsNeverLeasedToAVolunteer();
    void aTaskComputedAgainSendsTheMergeBackToWait();
    void aJobLoadedAgainWithEveryTaskAcceptedHasItsMergeQueued();
};

void TestGraphBook::theMergeWaitsOnEveryTaskAndIsTakenOnce() {
    NodeHarness node;
    GraphBook book;
    GraphJob& job = book.add(threeTasks(), rowsOf(3), node.blobs);
    const Task* merge = book.mergeTaskOf(job);
    QVERIFY(merge);
    QVERIFY(merge->id < 0); // a node task's id, never a row's
    QCOMPARE(merge->type, std::string(GraphBook::kMergeType));
    QCOMPARE(merge->dependencies, (std::vector<std::int64_t>{41, 42, 43}));
    // A task's readers are the graph tasks that read it, never the merge.
    QCOMPARE(book.readersOf(*book.task(41)), (std::vector<std::int64_t>{42}));
    QCOMPARE(book.dependentsOf(*book.task(41)), (std::vector<std::int64_t>{42}));
    QVERIFY(book.readersOf(*book.task(43)).empty());

    QVERIFY(decide(book, 41));
    QVERIFY(decide(book, 43));
    QCOMPARE(mergeState(book, job), TaskState::Waiting);
    QVERIFY(!book.takeMerge(job, "too soon"));
    QVERIFY(decide(book, 42));
    QCOMPARE(mergeState(book, job), TaskState::Queued);

    QVERIFY(book.takeMerge(job, "every task is decided"));
    QVERIFY(book.merging(job));
    QVERIFY(!book.takeMerge(job, "a second merge")); // the flag the engine's state replaced

    // A task it merges is rechecked: called off, to the queue, and taken again afterwards.
    book.callOffMerge(job, "task 43 is rechecked");
    QCOMPARE(mergeState(book, job), TaskState::Queued);
    QVERIFY(!book.merging(job));
    QVERIFY(book.takeMerge(job, "the recheck ended"));
    book.mergeDecided(job);
    QCOMPARE(mergeState(book, job), TaskState::Decided);
    QVERIFY(storyHas(book, job, "task 43 is rechecked"));
    QVERIFY(storyHas(book, job, "merged: the job's result"));
    book.callOffMerge(job, "too late"); // a decided merge stays decided
    QCOMPARE(mergeState(book, job), TaskState::Decided);
}

void TestGraphBook::theMergeIsNeverLeasedToAVolunteer() {
    NodeHarness node;
    GraphBook book;
    GraphJob* added = addDecided(book, node.blobs);
    QVERIFY(added);
    GraphJob& job = *added;
    QCOMPARE(mergeState(book, job), TaskState::Queued);
    QVERIFY(book.engine().hasQueued());
    QVERIFY(!book.hasQueued()); // nothing for the scheduler to lease
    VolunteerInfo volunteer;
    volunteer.volunteerId = "v1";
    volunteer.backend = "cpu";
    volunteer.address = "10.0.0.1";
    volunteer.graphs = true;
    bool asked = false;
    const auto leased = book.leaseFor(
        volunteer, {}, [](std::int64_t, const std::string&) { return false; },
        [&](std::int64_t) {
            asked = true;
            return true;
        });
    QVERIFY(!leased);
    QVERIFY(!asked); // refused before the scheduler's filter is asked
    QCOMPARE(mergeState(book, job), TaskState::Queued);
    // Ending the job cancels it.
    book.endJob(job.id, "its job failed");
    QCOMPARE(mergeState(book, job), TaskState::Cancelled);
    QVERIFY(!book.takeMerge(job, "after the end"));
}

void TestGraphBook::aTaskComputedAgainSendsTheMergeBackToWait() {
    NodeHarness node;
    GraphBook book;
    GraphJob* added = addDecided(book, node.blobs);
    QVERIFY(added);
    GraphJob& job = *added;
    QVERIFY(book.takeMerge(job, "every task is decided"));

    // The node replaced chunk 0's outputs while the merge ran: chunk 1 is computed again and the
    // merge waits for it (a merge that comes back then is not the job's result).
    const auto redone = book.redoDependents(*book.task(41), "the node replaced task 41's outputs");
    QVERIFY(std::find(redone.begin(), redone.end(), 42) != redone.end());
    QCOMPARE(book.state(*book.task(42)), TaskState::Queued);
    QCOMPARE(mergeState(book, job), TaskState::Waiting);
    QVERIFY(!book.merging(job));
    QVERIFY(!book.takeMerge(job, "before task 42 is decided again"));
    QVERIFY(decide(book, 42));
    QCOMPARE(mergeState(book, job), TaskState::Queued);
    QVERIFY(book.takeMerge(job, "every task is decided again"));
}

void TestGraphBook::aJobLoadedAgainWithEveryTaskAcceptedHasItsMergeQueued() {
    NodeHarness node;
    core::Tensor value = core::Tensor::allocate(core::DType::F32, {2}).value();
    value.values<float>()[0] = 1.5f;
    value.values<float>()[1] = -2.0f;
    std::vector<core::Tensor> outputs;
    outputs.push_back(std::move(value));
    const auto stored = storeTensors(node.blobs, outputs);
    QVERIFY(stored.has_value());
    GraphBook book;
    GraphJob& job = book.add(threeTasks(), rowsOf(3, boost::json::serialize(*stored)), node.blobs);
    QCOMPARE(job.done, std::int64_t{3});
    QCOMPARE(mergeState(book, job), TaskState::Queued);
    QVERIFY(book.takeMerge(job, "reloaded with every task accepted"));
    // Removing the job forgets its merge.
    const std::int64_t merge = job.mergeTask;
    book.remove(job.id);
    QVERIFY(!book.job("g-book"));
    QVERIFY(!book.engine().task(merge));
}

QTEST_GUILESS_MAIN(TestGraphBook)
#include "test_graph_book.moc"
