#include "access/access_requests.hpp"

namespace goblin::labnode::access {
namespace {

constexpr const char* kColumns =
    "SELECT id, email, name, institution, purpose, computations, needs, scale, state, "
    "created_at, decided_at, staff_note, credential_shown_at FROM access_requests ";

std::vector<std::string> splitComputations(const std::string& joined) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < joined.size()) {
        const auto comma = joined.find(',', start);
        const std::size_t end = comma == std::string::npos ? joined.size() : comma;
        if (end > start)
            out.push_back(joined.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

AccessRequest readRequest(const ScopedStatement& query) {
    AccessRequest request;
    request.id = query.columnInt(0);
    request.email = query.columnText(1);
    request.form.name = query.columnText(2);
    request.form.institution = query.columnText(3);
    request.form.purpose = query.columnText(4);
    request.form.computations = splitComputations(query.columnText(5));
    request.form.needs = query.columnText(6);
    request.form.scale = query.columnText(7);
    request.state = query.columnText(8);
    request.createdAt = query.columnDouble(9);
    request.decidedAt = query.columnIsNull(10) ? 0.0 : query.columnDouble(10);
    request.staffNote = query.columnIsNull(11) ? std::string() : query.columnText(11);
    request.credentialShownAt = query.columnIsNull(12) ? 0.0 : query.columnDouble(12);
    return request;
}

} // namespace

std::string joinComputations(const std::vector<std::string>& computations) {
    std::string joined;
    for (const std::string& kind : computations) {
        if (!joined.empty())
            joined.push_back(',');
        joined.append(kind);
    }
    return joined;
}

Expected<std::int64_t> insertAccessRequest(Database& db, const std::string& email,
                                           const AccessRequestForm& form, double now) {
    if (auto latest = latestAccessRequest(db, email); latest && latest->state != "refused") {
        std::string message = "there is already a request for ";
        message.append(email).append(" (").append(latest->state).append(")");
        return makeError(ErrorCode::InvalidInput, message);
    }
    auto insert = db.prepare(
        "INSERT INTO access_requests(email, name, institution, purpose, computations, needs, "
        "scale, created_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
    insert.bind(1, email).bind(2, form.name).bind(3, form.institution).bind(4, form.purpose);
    insert.bind(5, joinComputations(form.computations)).bind(6, form.needs).bind(7, form.scale);
    insert.bind(8, now);
    auto row = insert.step();
    if (!row)
        return tl::unexpected(row.error());
    return insert.columnInt(0);
}

std::optional<AccessRequest> latestAccessRequest(Database& db, const std::string& email) {
    auto query = db.prepare(std::string(kColumns) + "WHERE email = ? ORDER BY id DESC LIMIT 1");
    query.bind(1, email);
    if (!query.step().value_or(false))
        return std::nullopt;
    return readRequest(query);
}

std::optional<AccessRequest> accessRequest(Database& db, std::int64_t id) {
    auto query = db.prepare(std::string(kColumns) + "WHERE id = ?");
    query.bind(1, id);
    if (!query.step().value_or(false))
        return std::nullopt;
    return readRequest(query);
}

std::vector<AccessRequest> listAccessRequests(Database& db, const std::string& state) {
    auto query = db.prepare(std::string(kColumns) + "WHERE ?1 = '' OR state = ?1 ORDER BY id DESC");
    query.bind(1, state);
    std::vector<AccessRequest> requests;
    while (query.step().value_or(false))
        requests.push_back(readRequest(query));
    return requests;
}

Expected<AccessRequest> decideAccessRequest(Database& db, std::int64_t id, const std::string& state,
                                            const std::string& note, double now) {
    auto existing = accessRequest(db, id);
    if (!existing) {
        std::string message = "no access request ";
        message.append(std::to_string(id));
        return makeError(ErrorCode::NotFound, message);
    }
    if (existing->state != "pending") {
        std::string message = "access request ";
        message.append(std::to_string(id)).append(" was already ").append(existing->state);
        return makeError(ErrorCode::InvalidInput, message);
    }
    auto update = db.prepare("UPDATE access_requests SET state = ?, decided_at = ?, staff_note = ? "
                             "WHERE id = ? AND state = 'pending'");
    update.bind(1, state).bind(2, now).bind(3, note).bind(4, id);
    if (auto ok = update.run(); !ok)
        return tl::unexpected(ok.error());
    existing->state = state;
    existing->decidedAt = now;
    existing->staffNote = note;
    return *existing;
}

Expected<bool> markCredentialShown(Database& db, std::int64_t id, double now) {
    auto update = db.prepare("UPDATE access_requests SET credential_shown_at = ? WHERE id = ? AND "
                             "state = 'approved' AND credential_shown_at IS NULL");
    if (auto ok = update.bind(1, now).bind(2, id).run(); !ok)
        return tl::unexpected(ok.error());
    return db.changes() == 1;
}

} // namespace goblin::labnode::access
