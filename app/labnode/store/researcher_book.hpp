// Researchers' credentials as lab staff manage them (`researcher add`, `researchers list|revoke`):
// one active token per e-mail address, stored as a hash; a revoked one is refused at the next
// hello. Staff commands with their own connection, or the core thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "goblin/core/error.hpp"
#include "store/database.hpp"

namespace goblin::labnode {

enum class CredentialChange {
    New,    // refuse an e-mail that already has an active credential
    Rotate, // replace its token (the old one stops working)
};

// The researcher's id; AlreadyExists-like InvalidInput when `New` meets an active credential.
// A revoked researcher gets a new credential either way.
[[nodiscard]] Expected<std::int64_t> issueResearcherCredential(Database& db,
                                                               const std::string& email,
                                                               const std::string& tokenHash,
                                                               CredentialChange change, double now);

struct ResearcherListing {
    std::int64_t id = 0;
    std::string email;
    double createdAt = 0;
    bool active = true;
    double revokedAt = 0;
};
std::vector<ResearcherListing> listResearchers(Database& db);

// NotFound when no such researcher; revoking a revoked one is not an error.
[[nodiscard]] Expected<void> revokeResearcher(Database& db, const std::string& email, double now);

} // namespace goblin::labnode
