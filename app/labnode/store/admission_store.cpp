#include "store/admission_store.hpp"

namespace goblin::labnode {

std::int64_t registrationsSince(Database& db, const std::string& address, double since) {
    auto query = db.prepare("SELECT count(*) FROM registrations WHERE address = ? AND at >= ?");
    query.bind(1, address).bind(2, since);
    return query.step().value_or(false) ? query.columnInt(0) : 0;
}

Expected<void> recordRegistration(Database& db, const std::string& address, double now) {
    return db.prepare("INSERT INTO registrations(address, at) VALUES(?, ?)")
        .bind(1, address)
        .bind(2, now)
        .run();
}

bool isApproved(Database& db, const std::string& volunteerId) {
    auto query = db.prepare("SELECT 1 FROM volunteer_approvals WHERE volunteer_id = ?");
    query.bind(1, volunteerId);
    return query.step().value_or(false);
}

Expected<void> approveVolunteer(Database& db, const std::string& volunteerId, double now) {
    auto known = db.prepare("SELECT 1 FROM volunteers WHERE id = ?");
    known.bind(1, volunteerId);
    if (!known.step().value_or(false))
        return makeError(ErrorCode::NotFound, "no volunteer " + volunteerId + " registered");
    return db
        .prepare("INSERT OR IGNORE INTO volunteer_approvals(volunteer_id, approved_at) "
                 "VALUES(?, ?)")
        .bind(1, volunteerId)
        .bind(2, now)
        .run();
}

std::vector<VolunteerListing> listVolunteers(Database& db) {
    auto query = db.prepare(
        "SELECT v.id, coalesce(v.backend, ''), v.created_at, a.volunteer_id IS NOT NULL, "
        "t.quarantined_at IS NOT NULL, v.accepted, v.rejected FROM volunteers v "
        "LEFT JOIN volunteer_approvals a ON a.volunteer_id = v.id "
        "LEFT JOIN volunteer_trust t ON t.volunteer_id = v.id ORDER BY v.created_at, v.id");
    std::vector<VolunteerListing> listing;
    while (query.step().value_or(false))
        listing.push_back({query.columnText(0), query.columnText(1), query.columnDouble(2),
                           query.columnInt(3) != 0, query.columnInt(4) != 0, query.columnInt(5),
                           query.columnInt(6)});
    return listing;
}

} // namespace goblin::labnode
