#include "store/trust_store.hpp"

namespace goblin::labnode {
namespace {

Expected<void> ensureRow(Database& db, const std::string& volunteerId) {
    return db.prepare("INSERT OR IGNORE INTO volunteer_trust(volunteer_id) VALUES(?)")
        .bind(1, volunteerId)
        .run();
}

Expected<void> bump(Database& db, const std::string& volunteerId, const char* sql) {
    if (auto ok = ensureRow(db, volunteerId); !ok)
        return ok;
    return db.prepare(sql).bind(1, volunteerId).run();
}

} // namespace

TrustRecord loadTrust(Database& db, const std::string& volunteerId) {
    TrustRecord record;
    auto query = db.prepare("SELECT audits_passed, expiries, quarantined_at, "
                            "coalesce(quarantine_reason, '') FROM volunteer_trust "
                            "WHERE volunteer_id = ?");
    query.bind(1, volunteerId);
    if (!query.step().value_or(false))
        return record;
    record.auditsPassed = query.columnInt(0);
    record.expiries = query.columnInt(1);
    if (!query.columnIsNull(2))
        record.quarantinedAt = query.columnDouble(2);
    record.quarantineReason = query.columnText(3);
    return record;
}

Expected<void> addAuditPassed(Database& db, const std::string& volunteerId) {
    return bump(db, volunteerId,
                "UPDATE volunteer_trust SET audits_passed = audits_passed + 1 "
                "WHERE volunteer_id = ?");
}

Expected<void> addExpiry(Database& db, const std::string& volunteerId) {
    return bump(db, volunteerId,
                "UPDATE volunteer_trust SET expiries = expiries + 1 WHERE volunteer_id = ?");
}

Expected<bool> quarantineVolunteer(Database& db, const std::string& volunteerId,
                                   const std::string& reason, double now) {
    if (auto ok = ensureRow(db, volunteerId); !ok)
        return tl::unexpected(ok.error());
    auto update = db.prepare("UPDATE volunteer_trust SET quarantined_at = ?, quarantine_reason = ? "
                             "WHERE volunteer_id = ? AND quarantined_at IS NULL");
    update.bind(1, now).bind(2, reason).bind(3, volunteerId);
    if (auto ok = update.run(); !ok)
        return tl::unexpected(ok.error());
    return db.changes() == 1;
}

} // namespace goblin::labnode
