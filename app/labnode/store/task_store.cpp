#include "store/task_store.hpp"

#include <map>
#include <set>

namespace goblin::labnode {

Expected<void> recordTasks(Database& db, std::string_view kind,
                           const std::vector<TaskSpec>& tasks) {
    for (const TaskSpec& task : tasks) {
        auto insert = db.prepare("INSERT INTO engine_tasks(kind, id, job_id, type, attempt) "
                                 "VALUES(?,?,?,?,?)");
        insert.bind(1, kind).bind(2, task.id).bind(3, task.job).bind(4, task.type);
        if (auto ok = insert.bind(5, task.attempt).run(); !ok)
            return ok;
        for (std::int64_t dependency : task.dependencies) {
            auto link = db.prepare(
                "INSERT INTO task_dependencies(kind, task_id, depends_on) VALUES(?,?,?)");
            if (auto ok = link.bind(1, kind).bind(2, task.id).bind(3, dependency).run(); !ok)
                return ok;
        }
    }
    return {};
}

Expected<void> recordTaskAttempt(Database& db, std::string_view kind, std::int64_t task,
                                 std::int64_t attempt) {
    auto update = db.prepare("UPDATE engine_tasks SET attempt = max(attempt, ?) WHERE kind = ? "
                             "AND id = ?");
    return update.bind(1, attempt).bind(2, kind).bind(3, task).run();
}

Expected<void> recordTaskDecided(Database& db, std::string_view kind, std::int64_t task,
                                 bool decided) {
    auto update = db.prepare("UPDATE engine_tasks SET decided = ? WHERE kind = ? AND id = ?");
    return update.bind(1, std::int64_t{decided ? 1 : 0}).bind(2, kind).bind(3, task).run();
}

namespace {

// The job's rows in id order, each with its dependencies.
std::map<std::int64_t, StoredTask> rowsOf(Database& db, std::string_view kind,
                                          const std::string& job) {
    std::map<std::int64_t, StoredTask> rows;
    auto tasks = db.prepare("SELECT id, type, attempt, decided FROM engine_tasks WHERE kind = ? "
                            "AND job_id = ? ORDER BY id");
    tasks.bind(1, kind).bind(2, job);
    while (tasks.step().value_or(false)) {
        StoredTask row;
        row.spec.id = tasks.columnInt(0);
        row.spec.job = job;
        row.spec.type = tasks.columnText(1);
        row.spec.attempt = tasks.columnInt(2);
        row.decided = tasks.columnInt(3) != 0;
        rows.emplace(row.spec.id, std::move(row));
    }
    auto links = db.prepare("SELECT d.task_id, d.depends_on FROM task_dependencies d JOIN "
                            "engine_tasks t ON t.kind = d.kind AND t.id = d.task_id WHERE "
                            "d.kind = ? AND t.job_id = ? ORDER BY d.task_id, d.depends_on");
    links.bind(1, kind).bind(2, job);
    while (links.step().value_or(false))
        if (auto found = rows.find(links.columnInt(0)); found != rows.end())
            found->second.spec.dependencies.push_back(links.columnInt(1));
    return rows;
}

// Each task after the tasks it waits on (Kahn's order, lowest id first); an error for a
// dependency the job lacks or a cycle.
Expected<std::vector<StoredTask>> inDependencyOrder(std::map<std::int64_t, StoredTask> rows,
                                                    const std::string& job) {
    std::map<std::int64_t, std::size_t> waiting;
    std::map<std::int64_t, std::vector<std::int64_t>> dependents;
    for (const auto& [id, row] : rows) {
        waiting[id] = row.spec.dependencies.size();
        for (std::int64_t dependency : row.spec.dependencies) {
            if (!rows.contains(dependency))
                return makeError(ErrorCode::Internal,
                                 "job " + job + ": task " + std::to_string(id) + " waits on task " +
                                     std::to_string(dependency) + ", which it does not have");
            dependents[dependency].push_back(id);
        }
    }
    std::set<std::int64_t> ready;
    for (const auto& [id, count] : waiting)
        if (count == 0)
            ready.insert(id);
    std::vector<StoredTask> ordered;
    while (!ready.empty()) {
        const std::int64_t id = *ready.begin();
        ready.erase(ready.begin());
        ordered.push_back(rows.at(id));
        for (std::int64_t dependent : dependents[id])
            if (--waiting[dependent] == 0)
                ready.insert(dependent);
    }
    if (ordered.size() != rows.size())
        return makeError(ErrorCode::Internal,
                         "job " + job + ": its stored tasks wait on each other in a cycle");
    return ordered;
}

} // namespace

Expected<std::vector<StoredTask>> storedTasks(Database& db, std::string_view kind,
                                              const std::string& job) {
    return inDependencyOrder(rowsOf(db, kind, job), job);
}

Expected<void> forgetTasks(Database& db, std::string_view kind, const std::string& job) {
    auto links = db.prepare("DELETE FROM task_dependencies WHERE kind = ? AND task_id IN (SELECT "
                            "id FROM engine_tasks WHERE kind = ? AND job_id = ?)");
    if (auto ok = links.bind(1, kind).bind(2, kind).bind(3, job).run(); !ok)
        return ok;
    auto tasks = db.prepare("DELETE FROM engine_tasks WHERE kind = ? AND job_id = ?");
    return tasks.bind(1, kind).bind(2, job).run();
}

Expected<void> reloadTasks(Database& db, std::string_view kind, const std::string& job,
                           TaskGraph& graph) {
    auto ordered = storedTasks(db, kind, job);
    if (!ordered)
        return tl::unexpected(ordered.error());
    for (StoredTask& task : *ordered)
        graph.add(std::move(task.spec), "reloaded after a restart",
                  task.decided ? Reloaded::Decided : Reloaded::Undecided);
    return {};
}

} // namespace goblin::labnode
