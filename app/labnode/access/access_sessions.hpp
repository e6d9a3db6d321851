// Browser sessions of the access pages. A session is a random token in an HttpOnly,
// SameSite=Strict cookie (stored only as its hash); it starts anonymous, remembers the e-mail a
// code was sent to, and is replaced by a new token when the code signs it in. Every form carries
// the session's CSRF token, derived from the session token (never stored). Core thread.
#pragma once

#include <optional>
#include <string>

#include "database.hpp"
#include "node_context.hpp"

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

    // The live session of cookie `token`, or nullopt (unknown, expired).
    std::optional<Session> find(const std::string& token);
    // A new anonymous session.
    [[nodiscard]] Expected<Session> start();
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
