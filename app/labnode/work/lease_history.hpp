// What the scheduler remembers of leases lost without an answer, by volunteer id (so reconnecting
// changes nothing): which volunteers may never get a task again, how often each task expired, and
// how often each was handed back, each volunteer's slots after its expiries — halved on each expiry
// (at least 1), one back per lease it answers, up to what it advertises. The Scheduler owns it,
// reloads the bars and counts from lease_losses after a restart (slots start afresh). No I/O; core
// thread only.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "work/job_kind.hpp"

namespace goblin::labnode {

class LeaseHistory {
public:
    // A lease of (kind, task) that `volunteerId` lost: it is barred from the task; an expiry
    // counts towards the task's expiries. A frame never sent (the node's own failure) bars nobody
    // and counts nothing. Slots are not touched (see onExpired).
    void remember(std::string_view kind, std::int64_t task, const std::string& volunteerId,
                  LeaseLoss why);
    // The volunteer let a lease expire: its slots halve (at least 1). `advertised` is what its
    // hello asked for.
    void onExpired(const std::string& volunteerId, int advertised);
    // The volunteer answered a lease it held: one slot back, up to what it advertised.
    void onAnswered(const std::string& volunteerId, int advertised);
    // A lease of (kind, task) handed back (its volunteer hung up soon after taking it): no loss
    // of the volunteer's, but counted per task, since this node started.
    void onHandedBack(std::string_view kind, std::int64_t task);

    bool barred(std::string_view kind, std::int64_t task, const std::string& volunteerId) const;
    int expiries(std::string_view kind, std::int64_t task) const;
    int handBacks(std::string_view kind, std::int64_t task) const;
    // The slots the volunteer may fill now: what it advertised, less what its expiries cost.
    int slotsFor(const std::string& volunteerId, int advertised) const;

private:
    struct TaskLosses {
        std::set<std::string> barred;
        int expiries = 0;
        int handBacks = 0;
    };
    using TaskKey = std::pair<std::string, std::int64_t>;
    const TaskLosses* find(std::string_view kind, std::int64_t task) const;

    std::map<TaskKey, TaskLosses, std::less<>> m_tasks;
    std::unordered_map<std::string, int> m_slots; // only volunteers below what they advertise
};

} // namespace goblin::labnode
