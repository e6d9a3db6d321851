#include "store/volunteer_bans.hpp"

namespace goblin::labnode {
namespace {

bool isRegistered(Database& db, const std::string& volunteerId) {
    auto known = db.prepare("SELECT 1 FROM volunteers WHERE id = ?");
    known.bind(1, volunteerId);
    return known.step().value_or(false);
}

tl::unexpected<Error> notFound(const char* what, const std::string& volunteerId) {
    std::string message = what;
    message.append(volunteerId);
    return makeError(ErrorCode::NotFound, message);
}

} // namespace

Expected<void> banVolunteer(Database& db, const std::string& volunteerId, const std::string& reason,
                            double now) {
    if (!isRegistered(db, volunteerId))
        return notFound("no volunteer registered as ", volunteerId);
    auto transaction = Transaction::begin(db);
    if (!transaction)
        return tl::unexpected(transaction.error());
    auto ban =
        db.prepare("INSERT INTO volunteer_bans(volunteer_id, banned_at, reason) VALUES(?, ?, ?) "
                   "ON CONFLICT(volunteer_id) DO UPDATE SET banned_at = excluded.banned_at, "
                   "reason = excluded.reason, lifted_at = NULL");
    if (auto ok = ban.bind(1, volunteerId).bind(2, now).bind(3, reason).run(); !ok)
        return ok;
    auto flag = db.prepare("UPDATE volunteers SET banned = 1 WHERE id = ?");
    if (auto ok = flag.bind(1, volunteerId).run(); !ok)
        return ok;
    return transaction->commit();
}

Expected<void> unbanVolunteer(Database& db, const std::string& volunteerId, double now) {
    auto transaction = Transaction::begin(db);
    if (!transaction)
        return tl::unexpected(transaction.error());
    auto lift = db.prepare("UPDATE volunteer_bans SET lifted_at = ? WHERE volunteer_id = ? AND "
                           "lifted_at IS NULL");
    if (auto ok = lift.bind(1, now).bind(2, volunteerId).run(); !ok)
        return ok;
    if (db.changes() == 0)
        return notFound("no ban on volunteer ", volunteerId);
    auto flag = db.prepare("UPDATE volunteers SET banned = 0 WHERE id = ?");
    if (auto ok = flag.bind(1, volunteerId).run(); !ok)
        return ok;
    // Only the ban's own quarantine: one for a wrong result stays (trust_book.hpp: for good).
    auto release = db.prepare("UPDATE volunteer_trust SET quarantined_at = NULL, "
                              "quarantine_reason = NULL WHERE volunteer_id = ? AND "
                              "substr(quarantine_reason, 1, length(?2)) = ?2");
    if (auto ok = release.bind(1, volunteerId).bind(2, std::string_view(kBanReasonPrefix)).run();
        !ok)
        return ok;
    return transaction->commit();
}

std::vector<BanRecord> activeBans(Database& db) {
    auto query = db.prepare("SELECT volunteer_id, reason, banned_at FROM volunteer_bans "
                            "WHERE lifted_at IS NULL ORDER BY banned_at, volunteer_id");
    std::vector<BanRecord> bans;
    while (query.step().value_or(false))
        bans.push_back({query.columnText(0), query.columnText(1), query.columnDouble(2)});
    return bans;
}

std::optional<VolunteerDetail> volunteerDetail(Database& db, const std::string& volunteerId) {
    auto query = db.prepare(
        "SELECT v.id, coalesce(v.backend, ''), v.created_at, coalesce(v.last_seen, 0), v.accepted, "
        "v.rejected, coalesce(t.audits_passed, 0), coalesce(t.expiries, 0), "
        "a.volunteer_id IS NOT NULL, t.quarantined_at, coalesce(t.quarantine_reason, ''), "
        "b.banned_at, coalesce(b.reason, ''), b.lifted_at FROM volunteers v "
        "LEFT JOIN volunteer_trust t ON t.volunteer_id = v.id "
        "LEFT JOIN volunteer_approvals a ON a.volunteer_id = v.id "
        "LEFT JOIN volunteer_bans b ON b.volunteer_id = v.id WHERE v.id = ?");
    query.bind(1, volunteerId);
    if (!query.step().value_or(false))
        return std::nullopt;
    VolunteerDetail detail;
    detail.id = query.columnText(0);
    detail.backend = query.columnText(1);
    detail.createdAt = query.columnDouble(2);
    detail.lastSeen = query.columnDouble(3);
    detail.accepted = query.columnInt(4);
    detail.rejected = query.columnInt(5);
    detail.auditsPassed = query.columnInt(6);
    detail.expiries = query.columnInt(7);
    detail.approved = query.columnInt(8) != 0;
    if (!query.columnIsNull(9))
        detail.quarantinedAt = query.columnDouble(9);
    detail.quarantineReason = query.columnText(10);
    if (!query.columnIsNull(11) && query.columnIsNull(13))
        detail.ban = BanRecord{detail.id, query.columnText(12), query.columnDouble(11)};
    if (!query.columnIsNull(13))
        detail.banLiftedAt = query.columnDouble(13);
    return detail;
}

} // namespace goblin::labnode
