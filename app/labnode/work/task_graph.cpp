#include "work/task_graph.hpp"

#include <algorithm>
#include <cassert>
#include <utility>

namespace goblin::labnode {

void TaskGraph::add(TaskSpec spec, std::string_view cause, Reloaded reloaded) {
    assert(!m_tasks.contains(spec.id) && "a task is added once");
    Task task;
    task.id = spec.id;
    task.job = std::move(spec.job);
    task.type = std::move(spec.type);
    task.dependencies = std::move(spec.dependencies);
    task.opinions = std::max(1, spec.opinions);
    task.attempt = spec.attempt;
    for (std::int64_t dependency : task.dependencies) {
        auto found = m_tasks.find(dependency);
        assert(found != m_tasks.end() && "dependencies are added before their dependents");
        if (found == m_tasks.end())
            continue;
        found->second.dependents.push_back(task.id);
        if (found->second.state != TaskState::Decided)
            task.waitingOn.insert(dependency);
    }
    m_jobs[task.job].push_back(task.id);
    Task& added = m_tasks.emplace(task.id, std::move(task)).first->second;
    added.story.push_back(
        {TaskState::Waiting, TaskState::Waiting, added.attempt, std::string(cause)});
    if (reloaded == Reloaded::Decided) {
        added.state = TaskState::Decided;
        added.story.back().to = TaskState::Decided;
        ++m_decided[added.job];
        return;
    }
    if (added.waitingOn.empty())
        enqueue(added, QueuePlace::Back, "its dependencies are decided");
}

void TaskGraph::removeJob(const std::string& job) {
    auto found = m_jobs.find(job);
    if (found == m_jobs.end())
        return;
    for (std::int64_t id : found->second)
        m_tasks.erase(id);
    std::erase_if(m_queue, [&](std::int64_t id) { return !m_tasks.contains(id); });
    m_jobs.erase(found);
    m_decided.erase(job);
}

bool TaskGraph::replan(std::int64_t id, std::vector<std::int64_t> dependencies,
                       std::string_view cause) {
    Task* found = findIn(id, {TaskState::Waiting, TaskState::Queued});
    if (!found)
        return false;
    Task& planned = *found;
    for (std::int64_t old : planned.dependencies)
        if (auto from = m_tasks.find(old); from != m_tasks.end())
            std::erase(from->second.dependents, id);
    planned.waitingOn.clear();
    std::erase_if(dependencies,
                  [&](std::int64_t dependency) { return !m_tasks.contains(dependency); });
    for (std::int64_t dependency : dependencies) {
        Task& from = m_tasks.at(dependency);
        from.dependents.push_back(id);
        if (from.state != TaskState::Decided)
            planned.waitingOn.insert(dependency);
    }
    planned.dependencies = std::move(dependencies);
    if (planned.state == TaskState::Queued && !planned.waitingOn.empty()) {
        unqueue(id);
        planned.wanted = 0;
        move(planned, TaskState::Waiting, cause);
    } else if (planned.state == TaskState::Waiting && planned.waitingOn.empty()) {
        enqueue(planned, QueuePlace::Back, cause);
    } else {
        planned.story.push_back(
            {planned.state, planned.state, planned.attempt, std::string(cause)});
    }
    return true;
}

void TaskGraph::redirect(const std::vector<std::int64_t>& tasks, std::int64_t from, std::int64_t to,
                         std::string_view cause) {
    for (std::int64_t id : tasks)
        if (const Task* dependent = task(id)) {
            std::vector<std::int64_t> dependencies = dependent->dependencies;
            std::replace(dependencies.begin(), dependencies.end(), from, to);
            replan(id, std::move(dependencies), cause);
        }
}

bool TaskGraph::hasQueued(std::string_view type) const {
    return std::any_of(m_queue.begin(), m_queue.end(),
                       [&](std::int64_t id) { return m_tasks.at(id).type == type; });
}

const Task* TaskGraph::task(std::int64_t id) const {
    auto found = m_tasks.find(id);
    return found == m_tasks.end() ? nullptr : &found->second;
}

Task* TaskGraph::findIn(std::int64_t id, std::initializer_list<TaskState> states) {
    auto found = m_tasks.find(id);
    if (found == m_tasks.end() ||
        std::find(states.begin(), states.end(), found->second.state) == states.end())
        return nullptr;
    return &found->second;
}

TaskState TaskGraph::state(std::int64_t id) const {
    const Task* found = task(id);
    return found ? found->state : TaskState::Cancelled;
}

std::vector<std::int64_t> TaskGraph::tasksOf(const std::string& job) const {
    auto found = m_jobs.find(job);
    return found == m_jobs.end() ? std::vector<std::int64_t>{} : found->second;
}

std::int64_t TaskGraph::taskCount(const std::string& job) const {
    auto found = m_jobs.find(job);
    return found == m_jobs.end() ? 0 : static_cast<std::int64_t>(found->second.size());
}

std::int64_t TaskGraph::decidedCount(const std::string& job) const {
    auto found = m_decided.find(job);
    return found == m_decided.end() ? 0 : found->second;
}

const std::vector<Transition>& TaskGraph::story(std::int64_t id) const {
    static const std::vector<Transition> kNone;
    const Task* found = task(id);
    return found ? found->story : kNone;
}

std::optional<LeasedTask> TaskGraph::lease(const std::function<bool(const Task&)>& mayTake,
                                           std::string_view cause) {
    for (auto it = m_queue.begin(); it != m_queue.end(); ++it) {
        Task& candidate = m_tasks.at(*it);
        if (!mayTake(candidate))
            continue;
        ++candidate.attempt;
        if (--candidate.wanted > 0) {
            candidate.story.push_back(
                {TaskState::Queued, TaskState::Queued, candidate.attempt, std::string(cause)});
        } else {
            m_queue.erase(it);
            move(candidate, TaskState::Leased, cause);
        }
        return LeasedTask{candidate.id, candidate.attempt};
    }
    return std::nullopt;
}

bool TaskGraph::startDeciding(std::int64_t id, std::string_view cause) {
    Task* leased = findIn(id, {TaskState::Leased});
    if (!leased)
        return false;
    move(*leased, TaskState::Deciding, cause);
    return true;
}

bool TaskGraph::takeForDecision(std::int64_t id, std::string_view cause) {
    Task* taken = findIn(id, {TaskState::Queued, TaskState::Leased});
    if (!taken)
        return false;
    if (taken->state == TaskState::Queued)
        unqueue(id);
    taken->wanted = 0;
    move(*taken, TaskState::Deciding, cause);
    return true;
}

bool TaskGraph::requeue(std::int64_t id, QueuePlace place, std::string_view cause) {
    Task* back = findIn(id, {TaskState::Leased, TaskState::Deciding});
    if (!back)
        return false;
    enqueue(*back, place, cause, 1);
    return true;
}

bool TaskGraph::want(std::int64_t id, QueuePlace place, std::string_view cause) {
    Task* wanting = findIn(id, {TaskState::Queued});
    if (!wanting)
        return requeue(id, place, cause);
    ++wanting->wanted;
    wanting->story.push_back(
        {TaskState::Queued, TaskState::Queued, wanting->attempt, std::string(cause)});
    return true;
}

bool TaskGraph::stopWanting(std::int64_t id, std::string_view cause) {
    Task* queued = findIn(id, {TaskState::Queued});
    if (!queued)
        return false;
    unqueue(id);
    queued->wanted = 0;
    move(*queued, TaskState::Leased, cause);
    return true;
}

bool TaskGraph::callOff(std::int64_t id, std::string_view cause) {
    Task* deciding = findIn(id, {TaskState::Deciding});
    if (!deciding)
        return false;
    move(*deciding, TaskState::Leased, cause);
    return true;
}

std::vector<std::int64_t> TaskGraph::decide(std::int64_t id, std::string_view cause) {
    Task& decided = m_tasks.at(id);
    assert(decided.state == TaskState::Deciding && "only a task being decided is decided");
    move(decided, TaskState::Decided, cause);
    std::vector<std::int64_t> ready;
    for (std::int64_t dependentId : decided.dependents) {
        auto found = m_tasks.find(dependentId);
        if (found == m_tasks.end())
            continue;
        Task& dependent = found->second;
        dependent.waitingOn.erase(id);
        if (dependent.waitingOn.empty() && dependent.state == TaskState::Waiting) {
            enqueue(dependent, QueuePlace::Back,
                    "its last dependency, task " + std::to_string(id) + ", was decided");
            ready.push_back(dependentId);
        }
    }
    return ready;
}

std::vector<std::int64_t> TaskGraph::reopen(std::int64_t id, std::string_view cause) {
    Task& reopened = m_tasks.at(id);
    assert(reopened.state == TaskState::Decided && "only a decided task is reopened");
    enqueue(reopened, QueuePlace::Front, cause);
    return sendDependentsBack(id);
}

std::vector<std::int64_t> TaskGraph::redoDependents(std::int64_t id, std::string_view cause) {
    assert(m_tasks.at(id).state == TaskState::Decided &&
           "only a decided task's output is replaced");
    std::vector<std::int64_t> affected = sendDependentsBack(id);
    for (std::int64_t dependentId : m_tasks.at(id).dependents) {
        auto found = m_tasks.find(dependentId);
        if (found == m_tasks.end() || found->second.state != TaskState::Waiting)
            continue;
        Task& dependent = found->second;
        dependent.waitingOn.erase(id);
        if (dependent.waitingOn.empty())
            enqueue(dependent, QueuePlace::Front, cause);
    }
    return affected;
}

std::vector<std::int64_t> TaskGraph::sendDependentsBack(std::int64_t id) {
    std::vector<std::int64_t> affected;
    std::vector<std::int64_t> frontier{id};
    while (!frontier.empty()) {
        const std::int64_t from = frontier.back();
        frontier.pop_back();
        for (std::int64_t dependentId : m_tasks.at(from).dependents) {
            auto found = m_tasks.find(dependentId);
            if (found == m_tasks.end() || found->second.state == TaskState::Cancelled)
                continue;
            Task& dependent = found->second;
            dependent.waitingOn.insert(from);
            if (dependent.state == TaskState::Waiting)
                continue;
            if (dependent.state == TaskState::Queued)
                unqueue(dependentId);
            dependent.wanted = 0;
            move(dependent, TaskState::Waiting,
                 "its dependency, task " + std::to_string(from) + ", was reopened");
            affected.push_back(dependentId);
            frontier.push_back(dependentId);
        }
    }
    return affected;
}

void TaskGraph::cancelJob(const std::string& job, std::string_view cause) {
    for (std::int64_t id : tasksOf(job)) {
        Task& cancelled = m_tasks.at(id);
        if (cancelled.state == TaskState::Cancelled)
            continue;
        if (cancelled.state == TaskState::Queued)
            unqueue(id);
        cancelled.wanted = 0;
        move(cancelled, TaskState::Cancelled, cause);
    }
}

void TaskGraph::move(Task& task, TaskState to, std::string_view cause) {
    assert(mayTransition(task.state, to) && "the transition table allows this move");
    if (task.state == TaskState::Decided)
        --m_decided[task.job];
    if (to == TaskState::Decided)
        ++m_decided[task.job];
    task.story.push_back({task.state, to, task.attempt, std::string(cause)});
    task.state = to;
}

void TaskGraph::enqueue(Task& task, QueuePlace place, std::string_view cause, int opinions) {
    task.wanted = opinions > 0 ? opinions : task.opinions;
    move(task, TaskState::Queued, cause);
    if (place == QueuePlace::Front)
        m_queue.push_front(task.id);
    else
        m_queue.push_back(task.id);
}

void TaskGraph::unqueue(std::int64_t id) {
    std::erase(m_queue, id);
}

} // namespace goblin::labnode
