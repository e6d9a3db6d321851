// One-time sign-in codes for the access pages: random 8-digit codes from the node's CSPRNG, stored
// as hashes bound to their e-mail address, single use, expiring, refused after a few wrong tries,
// and rate-limited per e-mail address and per network address. Core thread (owns no connection:
// it uses the node's Database).
#pragma once

#include <string>

#include "goblin/core/random_source.hpp"
#include "node/node_context.hpp"
#include "store/database.hpp"

namespace goblin::labnode::access {

struct CodeSettings {
    double lifetimeSeconds = 15 * 60;
    int perEmailPerHour = 5;
    int perAddressPerHour = 20;
    int maxFailures = 5; // wrong codes tried against an e-mail's live codes before they die
};

class SignInCodes {
public:
    SignInCodes(Database& db, Clock clock, core::RandomSource& random, CodeSettings settings = {});

    // A new code for `email` (normalized) asked from network `address`: the plain code, to mail;
    // LimitExceeded when the e-mail or the address asked too often in the last hour.
    [[nodiscard]] Expected<std::string> issue(const std::string& email, const std::string& address);
    // Uses the code up: succeeds once per code, before it expires, for the e-mail it was sent
    // to. Unauthenticated (wrong, expired, used, or too many wrong tries) otherwise.
    [[nodiscard]] Expected<void> redeem(const std::string& email, const std::string& code);

    const CodeSettings& settings() const { return m_settings; }

private:
    std::string newCode();

    Database& m_db;
    Clock m_clock;
    core::RandomSource& m_random;
    CodeSettings m_settings;
};

// What is hashed and stored: the code bound to its address, so a code for one e-mail never
// signs in another.
std::string codeHash(const std::string& email, const std::string& code);

} // namespace goblin::labnode::access
