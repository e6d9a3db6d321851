#include "store/researcher_book.hpp"

#include <optional>

namespace goblin::labnode {
namespace {

struct Existing {
    std::int64_t id = 0;
    bool active = true;
};

std::optional<Existing> findResearcher(Database& db, const std::string& email) {
    auto query = db.prepare("SELECT r.id, v.researcher_id IS NULL FROM researchers r "
                            "LEFT JOIN researcher_revocations v ON v.researcher_id = r.id "
                            "WHERE r.email = ?");
    query.bind(1, email);
    if (!query.step().value_or(false))
        return std::nullopt;
    return Existing{query.columnInt(0), query.columnInt(1) != 0};
}

} // namespace

Expected<std::int64_t> issueResearcherCredential(Database& db, const std::string& email,
                                                 const std::string& tokenHash,
                                                 CredentialChange change, double now) {
    auto transaction = Transaction::begin(db);
    if (!transaction)
        return tl::unexpected(transaction.error());
    const std::optional<Existing> existing = findResearcher(db, email);
    if (existing && existing->active && change == CredentialChange::New) {
        std::string message = email;
        message.append(" already has a credential (--rotate issues a new one and revokes the old)");
        return makeError(ErrorCode::InvalidInput, message);
    }
    std::int64_t id = 0;
    if (existing) {
        id = existing->id;
        auto update = db.prepare("UPDATE researchers SET token_hash = ? WHERE id = ?");
        if (auto ok = update.bind(1, tokenHash).bind(2, id).run(); !ok)
            return tl::unexpected(ok.error());
        auto reinstate = db.prepare("DELETE FROM researcher_revocations WHERE researcher_id = ?");
        if (auto ok = reinstate.bind(1, id).run(); !ok)
            return tl::unexpected(ok.error());
    } else {
        auto insert = db.prepare(
            "INSERT INTO researchers(email, token_hash, created_at) VALUES(?, ?, ?) RETURNING id");
        insert.bind(1, email).bind(2, tokenHash).bind(3, now);
        auto row = insert.step();
        if (!row)
            return tl::unexpected(row.error());
        id = insert.columnInt(0);
    }
    if (auto ok = transaction->commit(); !ok)
        return tl::unexpected(ok.error());
    return id;
}

std::vector<ResearcherListing> listResearchers(Database& db) {
    auto query = db.prepare("SELECT r.id, r.email, r.created_at, v.revoked_at FROM researchers r "
                            "LEFT JOIN researcher_revocations v ON v.researcher_id = r.id "
                            "ORDER BY r.created_at, r.id");
    std::vector<ResearcherListing> listing;
    while (query.step().value_or(false)) {
        const bool revoked = !query.columnIsNull(3);
        listing.push_back({query.columnInt(0), query.columnText(1), query.columnDouble(2), !revoked,
                           revoked ? query.columnDouble(3) : 0.0});
    }
    return listing;
}

Expected<void> revokeResearcher(Database& db, const std::string& email, double now) {
    const std::optional<Existing> existing = findResearcher(db, email);
    if (!existing) {
        std::string message = "no researcher ";
        message.append(email);
        return makeError(ErrorCode::NotFound, message);
    }
    return db
        .prepare("INSERT OR IGNORE INTO researcher_revocations(researcher_id, revoked_at) "
                 "VALUES(?, ?)")
        .bind(1, existing->id)
        .bind(2, now)
        .run();
}

} // namespace goblin::labnode
