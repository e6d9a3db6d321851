#include "work/lease_history.hpp"

#include <algorithm>

namespace goblin::labnode {

void LeaseHistory::remember(std::string_view kind, std::int64_t task,
                            const std::string& volunteerId, LeaseLoss why) {
    if (why == LeaseLoss::NotSent)
        return; // the node's own failure: the volunteer never saw the task
    TaskLosses& losses = m_tasks[TaskKey{std::string(kind), task}];
    losses.barred.insert(volunteerId);
    if (why == LeaseLoss::Expired)
        ++losses.expiries;
}

void LeaseHistory::onHandedBack(std::string_view kind, std::int64_t task) {
    ++m_tasks[TaskKey{std::string(kind), task}].handBacks;
}

void LeaseHistory::onExpired(const std::string& volunteerId, int advertised) {
    m_slots[volunteerId] = std::max(1, slotsFor(volunteerId, advertised) / 2);
}

void LeaseHistory::onAnswered(const std::string& volunteerId, int advertised) {
    auto it = m_slots.find(volunteerId);
    if (it == m_slots.end())
        return;
    if (++it->second >= advertised)
        m_slots.erase(it);
}

const LeaseHistory::TaskLosses* LeaseHistory::find(std::string_view kind, std::int64_t task) const {
    auto it = m_tasks.find(TaskKey{std::string(kind), task});
    return it == m_tasks.end() ? nullptr : &it->second;
}

bool LeaseHistory::barred(std::string_view kind, std::int64_t task,
                          const std::string& volunteerId) const {
    const TaskLosses* losses = find(kind, task);
    return losses && losses->barred.contains(volunteerId);
}

int LeaseHistory::expiries(std::string_view kind, std::int64_t task) const {
    const TaskLosses* losses = find(kind, task);
    return losses ? losses->expiries : 0;
}

int LeaseHistory::slotsFor(const std::string& volunteerId, int advertised) const {
    auto it = m_slots.find(volunteerId);
    return it == m_slots.end() ? advertised : std::min(advertised, it->second);
}

int LeaseHistory::handBacks(std::string_view kind, std::int64_t task) const {
    const TaskLosses* losses = find(kind, task);
    return losses ? losses->handBacks : 0;
}

} // namespace goblin::labnode
