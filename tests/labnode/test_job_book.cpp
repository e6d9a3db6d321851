// Tests of JobBook: the tile queue, task states, re-queueing and completion (lease holders and
// deadlines are the Scheduler's: test_lease_table, test_scheduler).
#include <QtTest/QtTest>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "matmul/job_book.hpp"

using goblin::labnode::JobBook;
using goblin::labnode::RunningJob;
using goblin::labnode::TaskState;
using goblin::labnode::TileTask;

namespace {

// A job with tasks firstId, firstId+1, ... (one tile each, in a row).
void addJob(JobBook& book, const std::string& jobId, std::int64_t firstId, int count,
            std::vector<std::int64_t> alreadyAccepted = {}) {
    RunningJob job;
    job.record.id = jobId;
    job.record.state = "running";
    std::vector<TileTask> tasks;
    for (int i = 0; i < count; ++i) {
        TileTask task;
        task.id = firstId + i;
        task.jobId = jobId;
        task.row0 = 0;
        task.col0 = i * 4;
        task.rows = 4;
        task.cols = 4;
        if (std::find(alreadyAccepted.begin(), alreadyAccepted.end(), task.id) !=
            alreadyAccepted.end())
            task.state = TaskState::Accepted;
        tasks.push_back(task);
    }
    book.addJob(std::move(job), std::move(tasks));
}

// Everything the volunteer could take now, in order (emptying the queue for it).
std::vector<std::int64_t> drain(JobBook& book, const std::string& volunteer) {
    std::vector<std::int64_t> ids;
    while (auto id = book.takeNextFor(volunteer))
        ids.push_back(*id);
    return ids;
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
    QCOMPARE(book.job("j-1")->totalTiles, std::int64_t{4});
    QCOMPARE(book.job("j-1")->acceptedTiles, std::int64_t{0});
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
    QCOMPARE(book.takeNextFor("v-bad"), std::optional<std::int64_t>(2));
    // The skipped tasks are still queued, in order, for everyone else.
    QCOMPARE(book.takeNextFor("v-bad"), std::optional<std::int64_t>());
    QVERIFY(book.hasQueued());
    QCOMPARE(drain(book, "v-good"), (Ids{1, 3}));
}

void TestJobBook::leaseAndExpiry() {
    JobBook book;
    addJob(book, "j-1", 1, 3);
    const auto first = book.takeNextFor("v");
    const auto second = book.takeNextFor("v");
    QVERIFY(first && second);
    book.markLeased(*first, 1);
    book.markLeased(*second, 3);
    QCOMPARE(book.task(*first)->state, TaskState::Leased);
    QCOMPARE(book.task(*first)->attempt, std::int64_t{1});
    QCOMPARE(book.task(*second)->attempt, std::int64_t{3});
    QVERIFY(book.task(3)->state == TaskState::Queued);

    book.requeue(*first);
    QVERIFY(book.task(*first)->state == TaskState::Queued);
    QVERIFY(book.task(*second)->state == TaskState::Leased);
    // The attempt number of the lost lease is kept, so the next lease can use attempt + 1.
    QCOMPARE(book.task(*first)->attempt, std::int64_t{1});
}

void TestJobBook::takeSkipsOtherDtypes() {
    JobBook book;
    addJob(book, "j-1", 1, 2); // f32 (the record's default)
    const std::set<std::string> onlyF64{"f64"};
    const std::set<std::string> both{"f32", "f64"};
    QCOMPARE(book.takeNextFor("v", &onlyF64), std::optional<std::int64_t>());
    QCOMPARE(book.takeNextFor("v", &both), std::optional<std::int64_t>(1));
    QCOMPARE(book.takeNextFor("v"), std::optional<std::int64_t>(2));
}

void TestJobBook::requeueGoesToTheFront() {
    JobBook book;
    addJob(book, "j-1", 1, 4);
    const auto taken = book.takeNextFor("v");
    QCOMPARE(taken, std::optional<std::int64_t>(1));
    book.markLeased(1, 1);
    QCOMPARE(book.takeNextFor("v"), std::optional<std::int64_t>(2));
    book.markLeased(2, 1);
    book.requeue(2);
    book.requeue(1);
    QCOMPARE(drain(book, "w"), (Ids{1, 2, 3, 4}));
}

void TestJobBook::requeueIsIdempotent() {
    JobBook book;
    addJob(book, "j-1", 1, 2);
    QCOMPARE(book.takeNextFor("v"), std::optional<std::int64_t>(1));
    book.markLeased(1, 1);
    book.requeue(1);
    book.requeue(1);  // already queued: no second copy
    book.requeue(2);  // queued all along
    book.requeue(42); // unknown
    QCOMPARE(drain(book, "v"), (Ids{1, 2}));
}

void TestJobBook::acceptCompletesJobOnLastTile() {
    JobBook book;
    addJob(book, "j-1", 1, 3);
    addJob(book, "j-2", 10, 2);
    for (std::int64_t id : drain(book, "v"))
        book.markLeased(id, 1);
    QVERIFY(!book.accept(2));
    QVERIFY(!book.accept(10));
    QVERIFY(!book.accept(1));
    QCOMPARE(book.job("j-1")->acceptedTiles, std::int64_t{2});
    QVERIFY2(book.accept(11), "the last tile of j-2 completes j-2");
    QCOMPARE(book.job("j-2")->acceptedTiles, std::int64_t{2});
    QVERIFY2(book.accept(3), "the last tile of j-1 completes j-1");
    QCOMPARE(book.job("j-1")->acceptedTiles, std::int64_t{3});
    QCOMPARE(book.task(3)->state, TaskState::Accepted);
}

void TestJobBook::acceptedTasksStayOutOfTheQueue() {
    JobBook book;
    addJob(book, "j-1", 1, 2);
    QCOMPARE(book.takeNextFor("v"), std::optional<std::int64_t>(1));
    book.markLeased(1, 1);
    QVERIFY(!book.accept(1));
    book.requeue(1); // a late requeue of an accepted task changes nothing
    QCOMPARE(book.task(1)->state, TaskState::Accepted);
    QCOMPARE(drain(book, "v"), (Ids{2}));
}

void TestJobBook::reloadedJobCountsAcceptedTiles() {
    JobBook book;
    addJob(book, "j-1", 1, 4, {1, 3});
    QCOMPARE(book.job("j-1")->totalTiles, std::int64_t{4});
    QCOMPARE(book.job("j-1")->acceptedTiles, std::int64_t{2});
    QCOMPARE(drain(book, "v"), (Ids{2, 4}));
    book.markLeased(2, 1);
    book.markLeased(4, 1);
    QVERIFY(!book.accept(4));
    QVERIFY(book.accept(2));
}

void TestJobBook::removeJobDropsItsTasks() {
    JobBook book;
    addJob(book, "j-1", 1, 3);
    addJob(book, "j-2", 10, 2);
    QCOMPARE(book.takeNextFor("v"), std::optional<std::int64_t>(1));
    book.markLeased(1, 1);
    book.removeJob("j-1");
    QVERIFY(book.job("j-1") == nullptr);
    QVERIFY(book.task(1) == nullptr);
    QVERIFY(book.task(2) == nullptr);
    QCOMPARE(drain(book, "v"), (Ids{10, 11}));
    QVERIFY(book.job("j-2") != nullptr);
}

QTEST_APPLESS_MAIN(TestJobBook)
#include "test_job_book.moc"
