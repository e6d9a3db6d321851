// Browser sessions of the access pages. A session is a random token in an HttpOnly,
// SameSite=Strict cookie. It starts anonymous and unstored (so page views write nothing), is stored
// (as the token's hash) once a code is sent for it, with that e-mail, and is replaced by a new
// token when the code signs it in. Every form carries the session's CSRF token, derived from the
// session token (never stored). Core thread.
#pragma once

#include <optional>
#include <string>

#include "node/node_context.hpp"
#include "store/database.hpp"

namespace goblin::labnode::access {

struct Session {
    std::string token;        // the cookie's value
    std::string email;        // signed in as (empty: not yet)
    std::string pendingEmail; // a code was sent to it
    std::string csrf;         // what every POST of this session must carry
};

class AccessSessions {
public:
    static constexpr double kLifetimeSeconds = 12 * 3600;

    AccessSessions(Database& db, Clock clock);

    // The stored live session of cookie `token`; an anonymous one for any other well-formed token
    // (never stored, or expired); nullopt for a malformed or missing one.
    std::optional<Session> find(const std::string& token);
    // A new anonymous session (nothing stored).
    static Session anonymous();
    // Stores the session (anonymous until now, or not) with the e-mail a code was sent to.
    [[nodiscard]] Expected<void> setPendingEmail(const Session& session, const std::string& email);
    // Ends `session` and returns a new one signed in as `email` (no fixation of the old token).
    [[nodiscard]] Expected<Session> signIn(const Session& session, const std::string& email);
    [[nodiscard]] Expected<void> end(const Session& session);

private:
    Database& m_db;
    Clock m_clock;
};

// The CSRF token bound to a session token.
std::string csrfToken(const std::string& sessionToken);
// Compares in time independent of where the strings differ.
bool sameSecret(const std::string& a, const std::string& b);

} // namespace goblin::labnode::access
