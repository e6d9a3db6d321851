// Tests of the task engine's durable graph (store/task_store) on a real SQLite file: a node killed
// in the middle of a dependent chain reloads the job's graph and resumes without computing a
// decided task again, attempts continue past the stored ones, a reopened task is stored undecided,
// and a damaged graph (a missing dependency, a cycle) is refused whole with a clear error.
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/database.hpp"
#include "store/node_store.hpp"
#include "store/task_store.hpp"
#include "work/task_graph.hpp"

using goblin::labnode::Database;
using goblin::labnode::NodeStore;
using goblin::labnode::QueuePlace;
using goblin::labnode::Task;
using goblin::labnode::TaskGraph;
using goblin::labnode::TaskSpec;
using goblin::labnode::TaskState;
using goblin::labnode::Transaction;
namespace lab = goblin::labnode;

namespace {

using Ids = std::vector<std::int64_t>;
constexpr std::string_view kKind = "pipeline";
const std::string kJob = "p-1";

// A (1) ← B (2) ← C (3), and A ← D (4): a chain with a branch.
std::vector<TaskSpec> chainWithBranch() {
    return {TaskSpec{1, kJob, "forward", {}}, TaskSpec{2, kJob, "forward", {1}},
            TaskSpec{3, kJob, "forward", {2}}, TaskSpec{4, kJob, "backward", {1}}};
}

// The node's side: a store on the file and the graph in memory, as a running node holds them.
struct Node {
    explicit Node(const std::string& path) : store(std::make_unique<NodeStore>(path)) {}
    Database& db() { return store->database(); }

    void plan(const std::vector<TaskSpec>& tasks) {
        auto transaction = Transaction::begin(db());
        QVERIFY(transaction.has_value());
        QVERIFY(lab::recordTasks(db(), kKind, tasks).has_value());
        QVERIFY(transaction->commit().has_value());
        for (const TaskSpec& task : tasks)
            graph.add(task, "planned");
    }
    // Leases the queued task `id` (durable attempt first, as the scheduler records a lease).
    std::int64_t lease(std::int64_t id) {
        auto leased = graph.lease([id](const Task& task) { return task.id == id; }, "leased");
        if (!leased)
            return -1;
        if (!lab::recordTaskAttempt(db(), kKind, id, leased->attempt))
            return -1;
        return leased->attempt;
    }
    // A result for the leased task `id` is accepted: stored decided, then decided in memory.
    Ids decide(std::int64_t id) {
        if (!graph.startDeciding(id, "result"))
            return {-1};
        auto transaction = Transaction::begin(db());
        if (!transaction || !lab::recordTaskDecided(db(), kKind, id, true) ||
            !transaction->commit())
            return {-1};
        return graph.decide(id, "accepted");
    }
    Ids queued() {
        Ids ids;
        for (std::int64_t id : graph.tasksOf(kJob))
            if (graph.state(id) == TaskState::Queued)
                ids.push_back(id);
        return ids;
    }

    std::unique_ptr<NodeStore> store;
    TaskGraph graph;
};

} // namespace

class TestTaskStore : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void restartInTheMiddleOfADependentChain();
    void aReopenedTaskIsStoredUndecided();
    void aMissingDependencyIsRefusedWhole();
    void aCycleIsRefusedWhole();
    void forgottenTasksAreGone();
};

void TestTaskStore::restartInTheMiddleOfADependentChain() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("node.db").toStdString();
    std::int64_t leasedB = 0;
    {
        Node node(path);
        node.plan(chainWithBranch());
        QCOMPARE(node.queued(), (Ids{1}));
        QCOMPARE(node.lease(1), std::int64_t{1});
        QCOMPARE(node.decide(1), (Ids{2, 4}));
        leasedB = node.lease(2);
        QCOMPARE(leasedB, std::int64_t{1});
        // Killed here: B is leased, not decided; C waits on it; D is queued.
    }
    Node restarted(path);
    QVERIFY(lab::reloadTasks(restarted.db(), kKind, kJob, restarted.graph).has_value());
    QCOMPARE(restarted.graph.taskCount(kJob), std::int64_t{4});
    QCOMPARE(restarted.graph.decidedCount(kJob), std::int64_t{1});
    QCOMPARE(restarted.graph.state(1), TaskState::Decided); // never computed again
    QCOMPARE(restarted.graph.state(3), TaskState::Waiting);
    QCOMPARE(restarted.queued(), (Ids{2, 4}));
    // Nothing leases A again: only B and D go out, B at an attempt past the stored one.
    const std::int64_t againB = restarted.lease(2);
    QVERIFY(againB > leasedB);
    QCOMPARE(restarted.lease(4), std::int64_t{1});
    QVERIFY(!restarted.graph.lease([](const Task&) { return true; }, "anything else?"));
    QCOMPARE(restarted.decide(4), Ids{});
    QCOMPARE(restarted.decide(2), (Ids{3}));
    QCOMPARE(restarted.lease(3), std::int64_t{1});
    QCOMPARE(restarted.decide(3), Ids{});
    QCOMPARE(restarted.graph.decidedCount(kJob), std::int64_t{4});
    // Every decision is durable: a second restart finds the job decided whole.
    Node again(path);
    QVERIFY(lab::reloadTasks(again.db(), kKind, kJob, again.graph).has_value());
    QCOMPARE(again.graph.decidedCount(kJob), std::int64_t{4});
    QCOMPARE(again.queued(), Ids{});
}

void TestTaskStore::aReopenedTaskIsStoredUndecided() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("node.db").toStdString();
    {
        Node node(path);
        node.plan(chainWithBranch());
        node.lease(1);
        node.decide(1);
        node.lease(2);
        QCOMPARE(node.decide(2), (Ids{3}));
        // B's output is no longer trusted (its volunteer was caught): B and C are computed again.
        QCOMPARE(node.graph.reopen(2, "caught"), (Ids{3}));
        QVERIFY(lab::recordTaskDecided(node.db(), kKind, 2, false).has_value());
    }
    Node restarted(path);
    QVERIFY(lab::reloadTasks(restarted.db(), kKind, kJob, restarted.graph).has_value());
    QCOMPARE(restarted.graph.state(1), TaskState::Decided);
    QCOMPARE(restarted.graph.state(3), TaskState::Waiting); // waits for B's new value
    QCOMPARE(restarted.queued(), (Ids{2, 4}));
    QCOMPARE(restarted.lease(2), std::int64_t{2});
}

void TestTaskStore::aMissingDependencyIsRefusedWhole() {
    QTemporaryDir dir;
    Node node(dir.filePath("node.db").toStdString());
    QVERIFY(lab::recordTasks(node.db(), kKind,
                             {TaskSpec{1, kJob, "forward", {}}, TaskSpec{2, kJob, "forward", {9}}})
                .has_value());
    TaskGraph graph;
    const auto reloaded = lab::reloadTasks(node.db(), kKind, kJob, graph);
    QVERIFY(!reloaded);
    QCOMPARE(reloaded.error().code, goblin::ErrorCode::Internal);
    QVERIFY2(reloaded.error().message.find("task 2 waits on task 9") != std::string::npos,
             reloaded.error().message.c_str());
    QCOMPARE(graph.taskCount(kJob), std::int64_t{0});
}

void TestTaskStore::aCycleIsRefusedWhole() {
    QTemporaryDir dir;
    Node node(dir.filePath("node.db").toStdString());
    QVERIFY(lab::recordTasks(node.db(), kKind,
                             {TaskSpec{1, kJob, "forward", {}}, TaskSpec{2, kJob, "forward", {3}},
                              TaskSpec{3, kJob, "forward", {2}}})
                .has_value());
    TaskGraph graph;
    const auto reloaded = lab::reloadTasks(node.db(), kKind, kJob, graph);
    QVERIFY(!reloaded);
    QVERIFY2(reloaded.error().message.find("cycle") != std::string::npos,
             reloaded.error().message.c_str());
    QCOMPARE(graph.taskCount(kJob), std::int64_t{0});
}

void TestTaskStore::forgottenTasksAreGone() {
    QTemporaryDir dir;
    Node node(dir.filePath("node.db").toStdString());
    node.plan(chainWithBranch());
    QVERIFY(lab::recordTasks(node.db(), kKind, {TaskSpec{10, "p-2", "forward", {}}}).has_value());
    QVERIFY(lab::forgetTasks(node.db(), kKind, kJob).has_value());
    const auto gone = lab::storedTasks(node.db(), kKind, kJob);
    QVERIFY(gone.has_value());
    QVERIFY(gone->empty());
    const auto other = lab::storedTasks(node.db(), kKind, "p-2");
    QVERIFY(other.has_value());
    QCOMPARE(other->size(), std::size_t{1}); // another job's graph stays
    // The same ids under another kind are another graph.
    QVERIFY(lab::recordTasks(node.db(), "matmul", {TaskSpec{1, kJob, "tile", {}}}).has_value());
    QCOMPARE(lab::storedTasks(node.db(), "matmul", kJob)->size(), std::size_t{1});
}

QTEST_GUILESS_MAIN(TestTaskStore)
#include "test_task_store.moc"
