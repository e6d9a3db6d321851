#include "access/access_sessions.hpp"

#include "node/secrets.hpp"

namespace goblin::labnode::access {

std::string csrfToken(const std::string& sessionToken) {
    std::string bound = "csrf:";
    bound.append(sessionToken);
    return hashSecret(bound);
}

bool sameSecret(const std::string& a, const std::string& b) {
    if (a.size() != b.size())
        return false;
    unsigned char difference = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        difference |= static_cast<unsigned char>(a[i] ^ b[i]);
    return difference == 0;
}

AccessSessions::AccessSessions(Database& db, Clock clock) : m_db(db), m_clock(std::move(clock)) {}

namespace {

// newSecret()'s form: 64 lower-case hex digits.
bool wellFormedToken(const std::string& token) {
    return token.size() == 64 && token.find_first_not_of("0123456789abcdef") == std::string::npos;
}

} // namespace

std::optional<Session> AccessSessions::find(const std::string& token) {
    if (!wellFormedToken(token))
        return std::nullopt;
    auto query = m_db.prepare("SELECT email, pending_email FROM access_sessions WHERE "
                              "token_hash = ? AND expires_at > ?");
    query.bind(1, hashSecret(token)).bind(2, m_clock());
    if (!query.step().value_or(false))
        return Session{token, "", "", csrfToken(token)};
    Session session{token, query.columnIsNull(0) ? std::string() : query.columnText(0),
                    query.columnIsNull(1) ? std::string() : query.columnText(1), csrfToken(token)};
    return session;
}

Session AccessSessions::anonymous() {
    Session session;
    session.token = newSecret();
    session.csrf = csrfToken(session.token);
    return session;
}

Expected<void> AccessSessions::setPendingEmail(const Session& session, const std::string& email) {
    const double now = m_clock();
    // Expired sessions go as new ones are stored (as often as codes are sent, which is
    // rate-limited): the table stays the size of the live ones.
    (void)m_db.prepare("DELETE FROM access_sessions WHERE expires_at <= ?").bind(1, now).run();
    auto upsert = m_db.prepare(
        "INSERT INTO access_sessions(token_hash, pending_email, created_at, expires_at) "
        "VALUES(?, ?, ?, ?) ON CONFLICT(token_hash) DO UPDATE SET pending_email = "
        "excluded.pending_email");
    upsert.bind(1, hashSecret(session.token)).bind(2, email).bind(3, now);
    return upsert.bind(4, now + kLifetimeSeconds).run();
}

Expected<Session> AccessSessions::signIn(const Session& session, const std::string& email) {
    if (auto ok = end(session); !ok)
        return tl::unexpected(ok.error());
    const double now = m_clock();
    Session signedIn;
    signedIn.token = newSecret();
    signedIn.csrf = csrfToken(signedIn.token);
    signedIn.email = email;
    auto insert = m_db.prepare("INSERT INTO access_sessions(token_hash, email, created_at, "
                               "expires_at) VALUES(?, ?, ?, ?)");
    insert.bind(1, hashSecret(signedIn.token)).bind(2, email).bind(3, now);
    if (auto ok = insert.bind(4, now + kLifetimeSeconds).run(); !ok)
        return tl::unexpected(ok.error());
    return signedIn;
}

Expected<void> AccessSessions::end(const Session& session) {
    return m_db.prepare("DELETE FROM access_sessions WHERE token_hash = ?")
        .bind(1, hashSecret(session.token))
        .run();
}

} // namespace goblin::labnode::access
