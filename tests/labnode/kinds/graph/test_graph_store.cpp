// Tests of the graph kind's durable records (kinds/graph/graph_store) on a real SQLite file: a
// recheck replaces a decided task's outputs and gets back the list it replaced; a task that is not
// decided is refused as such; and a read that fails says the database's own error, not that the
// task is undecided (the transaction around it rolls back either way).
#include <QtTest/QtTest>

#include <string>
#include <string_view>

#include "kinds/graph/graph_store.hpp"
#include "labnode/store_lab.hpp"

using namespace goblin::labnode;

namespace {

constexpr std::string_view kRequest = R"({"graph": {}})";
constexpr std::string_view kInputs = "[]";

struct Lab : goblin::labnode::testing::StoreLab {

    // A job of two tasks, the first accepted with `outputs`.
    std::vector<GraphTaskRow> job(const std::string& outputs) {
        const GraphJobRow row{"g-store",
                              researcher,
                              JobState::Running,
                              2,
                              std::string(kRequest),
                              std::string(kInputs),
                              1.0,
                              {}};
        if (!insertGraphJob(db, row))
            return {};
        auto tasks = insertGraphTasks(db, row.id, 2);
        if (!tasks || !setGraphTaskAccepted(db, tasks->front().id, outputs))
            return {};
        return *tasks;
    }

    std::string storedOutputs(std::int64_t task) {
        auto query = db.prepare("SELECT coalesce(outputs, '') FROM graph_tasks WHERE id = ?");
        query.bind(1, task);
        return query.step().value_or(false) ? query.columnText(0) : std::string("(no row)");
    }
};

} // namespace

class TestGraphStore : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aRecheckReplacesTheOutputsAndReturnsTheOldOnes() {
        Lab lab;
        const auto tasks = lab.job(R"(["volunteer"])");
        QCOMPARE(tasks.size(), std::size_t{2});
        const auto replaced = replaceGraphTaskOutputs(lab.db, tasks[0].id, R"(["node"])");
        QVERIFY2(replaced.has_value(), replaced ? "" : replaced.error().message.c_str());
        QCOMPARE(*replaced, std::string(R"(["volunteer"])"));
        QCOMPARE(lab.storedOutputs(tasks[0].id), std::string(R"(["node"])"));
    }

    void aTaskNotDecidedIsRefusedAsSuch() {
        Lab lab;
        const auto tasks = lab.job(R"(["volunteer"])");
        QCOMPARE(tasks.size(), std::size_t{2});
        const auto replaced = replaceGraphTaskOutputs(lab.db, tasks[1].id, R"(["node"])");
        QVERIFY(!replaced.has_value());
        QVERIFY2(replaced.error().message.find("is not decided") != std::string::npos,
                 replaced.error().message.c_str());
        QCOMPARE(lab.storedOutputs(tasks[1].id), std::string());
    }

    void aFailedReadSaysTheDatabasesError() {
        Lab lab;
        const auto tasks = lab.job(R"(["volunteer"])");
        QCOMPARE(tasks.size(), std::size_t{2});
        // The table becomes a view whose read of an accepted task's outputs fails while it runs
        // (an integer overflow in SQL): the statement prepares, its step errs.
        QVERIFY(lab.db
                    .execute("PRAGMA foreign_keys = OFF; "
                             "ALTER TABLE graph_tasks RENAME TO graph_tasks_kept; "
                             "CREATE VIEW graph_tasks AS SELECT id, job_id, chunk, state, "
                             "CASE WHEN state = 'accepted' THEN abs(-9223372036854775807 - 1) "
                             "ELSE outputs END AS outputs FROM graph_tasks_kept")
                    .has_value());
        const auto replaced = replaceGraphTaskOutputs(lab.db, tasks[0].id, R"(["node"])");
        QVERIFY(!replaced.has_value());
        const std::string& message = replaced.error().message;
        QVERIFY2(message.find("is not decided") == std::string::npos, message.c_str());
        QVERIFY2(message.find("integer overflow") != std::string::npos, message.c_str());
    }
};

QTEST_APPLESS_MAIN(TestGraphStore)
#include "test_graph_store.moc"
