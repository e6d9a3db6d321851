#include "lease_store.hpp"

namespace goblin::labnode {

Expected<void> recordLease(Database& db, const LeaseRecord& lease) {
    auto insert = db.prepare("INSERT INTO task_leases(kind, task_id, attempt, volunteer_id, "
                             "leased_at, deadline) VALUES(?,?,?,?,?,?)");
    insert.bind(1, lease.kind).bind(2, lease.task).bind(3, lease.attempt);
    return insert.bind(4, lease.volunteerId).bind(5, lease.leasedAt).bind(6, lease.deadline).run();
}

} // namespace goblin::labnode
