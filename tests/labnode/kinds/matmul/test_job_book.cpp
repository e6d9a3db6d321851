// Tests of JobBook: the tile queue, task states, re-queueing and completion, on the task engine
// (lease holders and deadlines are the Scheduler's: test_lease_table, test_scheduler).
#include <QtTest/QtTest>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "kinds/matmul/job_book.hpp"

using goblin::labnode::JobBook;
using goblin::labnode::JobState;
using goblin::labnode::PlannedTile;
using goblin::labnode::RunningJob;
using goblin::labnode::TaskState;
using goblin::labnode::TileTask;

namespace {

// A job with tasks firstId, firstId+1, ... (one tile each, in a row).
void addJob(JobBook& book, const std::string& jobId, std::int64_t firstId, int count,
            std::vector<std::int64_t> alreadyAccepted = {}) {
    RunningJob job;
    job.record.id = jobId;
    job.record.state = JobState::Running;
    std::vector<PlannedTile> tasks;
    for (int i = 0; i < count; ++i) {
        PlannedTile planned;
        TileTask& task = planned.tile;
        task.id = firstId + i;
        task.jobId = jobId;
        task.row0 = 0;
        task.col0 = i * 4;
        task.rows = 4;
        task.cols = 4;
        planned.accepted = std::find(alreadyAccepted.begin(), alreadyAccepted.end(), task.id) !=
                           alreadyAccepted.end();
        tasks.push_back(planned);
    }
    book.addJob(std::move(job), std::move(tasks));
}

// The task the volunteer leases next, if any.
std::optional<std::int64_t> takeNextFor(JobBook& book, const std::string& volunteer,
                                        const std::set<std::string>* dtypes = nullptr) {
    auto leased = book.leaseNextFor(volunteer, dtypes);
    if (!leased)
        return std::nullopt;
    return leased->task;
}

// Everything the volunteer could take now, in order (emptying the queue for it).
std::vector<std::int64_t> drain(JobBook& book, const std::string& volunteer) {
    std::vector<std::int64_t> ids;
    while (auto id = takeNextFor(book, volunteer))
        ids.push_back(*id);
    return ids;
}

// A leased task's result is verified and accepted; true when that completed its job.
bool verifyAndAccept(JobBook& book, std::int64_t id) {
    if (!book.startVerifying(id))
        return false;
    return book.accept(id);
}

using Ids = std::vector<std::int64_t>;

} // namespace

class TestJobBook : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void queueIsFirstInFirstOut();
    void jobsQueueInOrderOfArrival();
    void takeSkipsRefusedVolunteers();
    void leaseAndExpiry();
    void requeueGoesToTheFront();
    void requeueIsIdempotent();
    void takeSkipsOtherDtypes();
    void acceptCompletesJobOnLastTile();
    void acceptedTasksStayOutOfTheQueue();
    void reloadedJobCountsAcceptedTiles();
    void removeJobDropsItsTasks();
};

void TestJobBook::queueIsFirstInFirstOut() {
    JobBook book;
    QVERIFY(!book.hasQueued());
    addJob(book, "j-1", 10, 4);
    QVERIFY(book.hasQueued());
    QCOMPARE(drain(book, "v-a"), (Ids{10, 11, 12, 13}));
    QVERIFY(!book.hasQueued());
    QCOMPARE(book.totalTiles("j-1"), std::int64_t{4});
    QCOMPARE(book.acceptedTiles("j-1"), std::int64_t{0});
    QVERIFY(book.job("j-2") == nullptr);
    QVERIFY(book.task(99) == nullptr);
    QCOMPARE(book.task(12)->jobId, std::string("j-1"));
    QCOMPARE(book.task(12)->col0, std::int64_t{8});
}

void TestJobBook::jobsQueueInOrderOfArrival() {
    JobBook book;
    addJob(book, "j-b", 20, 2);
    addJob(book, "j-a", 1, 3);
    QCOMPARE(drain(book, "v"), (Ids{20, 21, 1, 2, 3}));
}

void TestJobBook::takeSkipsRefusedVolunteers() {
    JobBook book;
    addJob(book, "j-1", 1, 3);
    book.refuse(1, "v-bad");
    book.refuse(3, "v-bad");
    book.refuse(77, "v-bad"); // unknown task: ignored
    QCOMPARE(takeNextFor(book, "v-bad"), std::optional<std::int64_t>(2));
    // The skipped tasks are still queued, in order, for everyone else.
    QCOMPARE(takeNextFor(book, "v-bad"), std::optional<std::int64_t>());
    QVERIFY(book.hasQueued());
    QCOMPARE(drain(book, "v-good"), (Ids{1, 3}));
}

void TestJobBook::leaseAndExpiry() {
    JobBook book;
    addJob(book, "j-1", 1, 3);
    const auto first = book.leaseNextFor("v");
    const auto second = book.leaseNextFor("v");
    QVERIFY(first && second);
    QCOMPARE(book.state(first->task), TaskState::Leased);
    QCOMPARE(first->attempt, std::int64_t{1});
    QCOMPARE(book.attempt(first->task), std::int64_t{1});
    QCOMPARE(book.attempt(second->task), std::int64_t{1});
    QVERIFY(book.state(3) == TaskState::Queued);

    book.requeue(first->task, "lease expired");
    QVERIFY(book.state(first->task) == TaskState::Queued);
    QVERIFY(book.state(second->task) == TaskState::Leased);
    // The attempt number of the lost lease is kept, so the next lease uses attempt + 1.
    QCOMPARE(book.attempt(first->task), std::int64_t{1});
    const auto again = book.leaseNextFor("v");
    QCOMPARE(again->task, first->task);
    QCOMPARE(again->attempt, std::int64_t{2});
}

void TestJobBook::takeSkipsOtherDtypes() {
    JobBook book;
    addJob(book, "j-1", 1, 2); // f32 (the record's default)
    const std::set<std::string> onlyF64{"f64"};
    const std::set<std::string> both{"f32", "f64"};
    QCOMPARE(takeNextFor(book, "v", &onlyF64), std::optional<std::int64_t>());
    QCOMPARE(takeNextFor(book, "v", &both), std::optional<std::int64_t>(1));
    QCOMPARE(takeNextFor(book, "v"), std::optional<std::int64_t>(2));
}

void TestJobBook::requeueGoesToTheFront() {
    JobBook book;
    addJob(book, "j-1", 1, 4);
    const auto taken = takeNextFor(book, "v");
    QCOMPARE(taken, std::optional<std::int64_t>(1));
    QCOMPARE(takeNextFor(book, "v"), std::optional<std::int64_t>(2));
    book.requeue(2, "lease expired");
    book.requeue(1, "lease expired");
    QCOMPARE(drain(book, "w"), (Ids{1, 2, 3, 4}));
}

void TestJobBook::requeueIsIdempotent() {
    JobBook book;
    addJob(book, "j-1", 1, 2);
    QCOMPARE(takeNextFor(book, "v"), std::optional<std::int64_t>(1));
    book.requeue(1, "lease expired");
    book.requeue(1, "again");    // already queued: no second copy
    book.requeue(2, "queued");   // queued all along
    book.requeue(42, "unknown"); // unknown
    QCOMPARE(drain(book, "v"), (Ids{1, 2}));
}

void TestJobBook::acceptCompletesJobOnLastTile() {
    JobBook book;
    addJob(book, "j-1", 1, 3);
    addJob(book, "j-2", 10, 2);
    QCOMPARE(drain(book, "v").size(), std::size_t{5});
    QVERIFY(!verifyAndAccept(book, 2));
    QVERIFY(!verifyAndAccept(book, 10));
    QVERIFY(!verifyAndAccept(book, 1));
    QCOMPARE(book.acceptedTiles("j-1"), std::int64_t{2});
    QVERIFY2(verifyAndAccept(book, 11), "the last tile of j-2 completes j-2");
    QCOMPARE(book.acceptedTiles("j-2"), std::int64_t{2});
    QVERIFY2(verifyAndAccept(book, 3), "the last tile of j-1 completes j-1");
    QCOMPARE(book.acceptedTiles("j-1"), std::int64_t{3});
    QCOMPARE(book.state(3), TaskState::Decided);
}

void TestJobBook::acceptedTasksStayOutOfTheQueue() {
    JobBook book;
    addJob(book, "j-1", 1, 2);
    QCOMPARE(takeNextFor(book, "v"), std::optional<std::int64_t>(1));
    QVERIFY(!verifyAndAccept(book, 1));
    book.requeue(1, "late"); // a late requeue of an accepted task changes nothing
    QCOMPARE(book.state(1), TaskState::Decided);
    QCOMPARE(drain(book, "v"), (Ids{2}));
}

void TestJobBook::reloadedJobCountsAcceptedTiles() {
    JobBook book;
    addJob(book, "j-1", 1, 4, {1, 3});
    QCOMPARE(book.totalTiles("j-1"), std::int64_t{4});
    QCOMPARE(book.acceptedTiles("j-1"), std::int64_t{2});
    QCOMPARE(drain(book, "v"), (Ids{2, 4}));
    QVERIFY(!verifyAndAccept(book, 4));
    QVERIFY(verifyAndAccept(book, 2));
}

void TestJobBook::removeJobDropsItsTasks() {
    JobBook book;
    addJob(book, "j-1", 1, 3);
    addJob(book, "j-2", 10, 2);
    QCOMPARE(takeNextFor(book, "v"), std::optional<std::int64_t>(1));
    book.removeJob("j-1");
    QVERIFY(book.job("j-1") == nullptr);
    QVERIFY(book.task(1) == nullptr);
    QVERIFY(book.task(2) == nullptr);
    QCOMPARE(drain(book, "v"), (Ids{10, 11}));
    QVERIFY(book.job("j-2") != nullptr);
}

QTEST_APPLESS_MAIN(TestJobBook)
#include "test_job_book.moc"
