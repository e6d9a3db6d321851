// The task engine's state machine, independent of any job kind (Dask's SchedulerState is the
// model): tasks with the tasks they wait on, one TaskState each, an attempt, a queue of ready
// tasks, and every transition recorded with the stimulus that caused it (story()). Only queued
// tasks are leased; a task becomes queued when its last dependency is decided; reopening a decided
// task sends everything that depends on it back to waiting. Pure (no I/O, no clock): kinds mirror
// what they must keep into the store. Core thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "work/task_state.hpp"

namespace goblin::labnode {

// A task as a kind plans it: its id, job, type (which decider judges it), dependencies (tasks
// already in the graph), the volunteer opinions its decider wants (1, or 2 replicas) and, for a
// task reloaded after a restart, its last attempt.
struct TaskSpec {
    std::int64_t id = 0;
    std::string job;
    std::string type;
    std::vector<std::int64_t> dependencies;
    std::int64_t attempt = 0;
    int opinions = 1;
};

// One recorded transition: the story of a task is the list of them, oldest first.
struct Transition {
    TaskState from = TaskState::Waiting;
    TaskState to = TaskState::Waiting;
    std::int64_t attempt = 0;
    std::string cause;
};

struct Task {
    std::int64_t id = 0;
    std::string job;
    std::string type;
    std::vector<std::int64_t> dependencies;
    std::vector<std::int64_t> dependents;
    std::set<std::int64_t> waitingOn; // dependencies not decided now
    TaskState state = TaskState::Waiting;
    int opinions = 1;         // volunteer opinions wanted when it is queued
    int wanted = 0;           // opinions still to lease while it is queued
    std::int64_t attempt = 0; // of the current or last lease
    std::vector<Transition> story;
};

// A task handed to a volunteer: the task and its new attempt number.
struct LeasedTask {
    std::int64_t task = 0;
    std::int64_t attempt = 0;
};

// Where a task that goes back to the queue stands: first (it was taken already, so it goes before
// tasks never tried) or last.
enum class QueuePlace { Front, Back };

// A task reloaded after a restart either still has to be computed or was decided before.
enum class Reloaded { Undecided, Decided };

class TaskGraph {
public:
    // Adds a task whose dependencies are in the graph already: queued at the back when they are
    // all decided (or it has none), else waiting. `Reloaded::Decided` adds it decided.
    void add(TaskSpec spec, std::string_view cause, Reloaded reloaded = Reloaded::Undecided);
    // Forgets a job's tasks (its data is gone); dependents in other jobs keep waiting.
    void removeJob(const std::string& job);
    // An id for a task the node decides that is no row of a kind's table (a merge, a step): they
    // count down from -1, so they never meet the rows' ids.
    std::int64_t nodeTaskId() { return --m_lastNodeTaskId; }
    // A task not taken yet (waiting or queued) gets its dependencies planned again (the work it
    // needs runs again as new tasks, a job of another kind on this engine included): it waits
    // on those not decided, or is queued when none is left. False otherwise.
    bool replan(std::int64_t id, std::vector<std::int64_t> dependencies, std::string_view cause);
    // The work task `from` stood for is planned again as task `to`: each of `tasks` (those that
    // depended on `from`, taken before it was removed) depends on `to` instead (replan).
    void redirect(const std::vector<std::int64_t>& tasks, std::int64_t from, std::int64_t to,
                  std::string_view cause);

    const Task* task(std::int64_t id) const;
    TaskState state(std::int64_t id) const; // Cancelled for an unknown task
    std::vector<std::int64_t> tasksOf(const std::string& job) const;
    std::int64_t taskCount(const std::string& job) const;
    std::int64_t decidedCount(const std::string& job) const;
    const std::vector<Transition>& story(std::int64_t id) const;

    bool hasQueued() const { return !m_queue.empty(); }
    // Whether a task of this type is queued (an engine that also holds tasks the node decides).
    bool hasQueued(std::string_view type) const;
    // Leases one opinion of the first queued task `mayTake` accepts, with a fresh attempt. The
    // task stays queued while it wants more opinions, else Queued → Leased.
    std::optional<LeasedTask> lease(const std::function<bool(const Task&)>& mayTake,
                                    std::string_view cause);
    // A result arrived for a leased task (Leased → Deciding); false when it is not leased.
    bool startDeciding(std::int64_t id, std::string_view cause);
    // The node takes the task to decide it now, wanting no more opinions: it computes it itself,
    // or the opinions in are enough (Queued or Leased → Deciding); false otherwise.
    bool takeForDecision(std::int64_t id, std::string_view cause);
    // Back to the queue (a lost lease, a rejected result, a failed commit): from Leased or
    // Deciding, wanting one opinion; anything else is left alone and false returned.
    bool requeue(std::int64_t id, QueuePlace place, std::string_view cause);
    // One more volunteer opinion is wanted (a lost lease, a rejected or dropped replica): a queued
    // task wants one more, a leased or deciding one is queued again for one. False otherwise.
    bool want(std::int64_t id, QueuePlace place, std::string_view cause);
    // The opinions a queued task still wants are not needed (the node decides it with what it
    // has, or computes it): Queued → Leased, for the leases out and the node. False otherwise.
    bool stopWanting(std::int64_t id, std::string_view cause);
    // A decision that began is called off before it was taken (a replica it rests on was
    // dropped): Deciding → Leased, to be judged again. False otherwise.
    bool callOff(std::int64_t id, std::string_view cause);
    // The task's output is accepted (Deciding → Decided). Returns the dependents this made ready.
    std::vector<std::int64_t> decide(std::int64_t id, std::string_view cause);
    // A decided task must be computed again (its output is no longer trusted): it is queued
    // again, and every task that depends on it, directly or not, waits again whatever its state
    // (a decided one is computed again once the new output is decided). Returns those dependents.
    std::vector<std::int64_t> reopen(std::int64_t id, std::string_view cause);
    // A decided task's output was replaced (the node recomputed it after a volunteer of it was
    // caught): it stays decided, and every task that depends on it, directly or not, is computed
    // again from the new output: the direct dependents are queued (once nothing else holds them),
    // the others wait. Returns those dependents.
    std::vector<std::int64_t> redoDependents(std::int64_t id, std::string_view cause);
    // Every task of the job ends (Cancelled), none is queued any more.
    void cancelJob(const std::string& job, std::string_view cause);

private:
    // The task when it is in one of `states`, else nullptr (unknown, or in another state).
    Task* findIn(std::int64_t id, std::initializer_list<TaskState> states);
    void move(Task& task, TaskState to, std::string_view cause);
    // Queues it wanting `opinions` opinions (0: as many as it was planned with).
    void enqueue(Task& task, QueuePlace place, std::string_view cause, int opinions = 0);
    void unqueue(std::int64_t id);
    // Every task that depends on `id`, directly or not, waits again (for `id` too).
    std::vector<std::int64_t> sendDependentsBack(std::int64_t id);

    std::unordered_map<std::int64_t, Task> m_tasks;
    std::map<std::string, std::vector<std::int64_t>> m_jobs; // in the order they were added
    std::map<std::string, std::int64_t> m_decided;
    std::deque<std::int64_t> m_queue;
    std::int64_t m_lastNodeTaskId = 0;
};

} // namespace goblin::labnode
