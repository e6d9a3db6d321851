// Researchers' access requests as the form took them, and staff's decisions on them (the staff
// command line and the access pages share this table). One open request per e-mail address; a
// refused researcher may ask again. Core thread, or a staff command's own connection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "access/access_form.hpp"
#include "store/database.hpp"

namespace goblin::labnode::access {

struct AccessRequest {
    std::int64_t id = 0;
    std::string email;
    AccessRequestForm form;
    std::string state; // pending, approved, refused
    double createdAt = 0;
    double decidedAt = 0;         // 0 while pending
    std::string staffNote;        // the reason of a refusal, shown to the researcher
    double credentialShownAt = 0; // 0 until the researcher saw the credential
};

[[nodiscard]] Expected<std::int64_t> insertAccessRequest(Database& db, const std::string& email,
                                                         const AccessRequestForm& form, double now);
// The e-mail's most recent request.
std::optional<AccessRequest> latestAccessRequest(Database& db, const std::string& email);
std::optional<AccessRequest> accessRequest(Database& db, std::int64_t id);
// Every request, newest first; only `state`'s when it is not empty.
std::vector<AccessRequest> listAccessRequests(Database& db, const std::string& state);

// pending → approved or refused; InvalidInput when it was decided already, NotFound.
[[nodiscard]] Expected<AccessRequest> decideAccessRequest(Database& db, std::int64_t id,
                                                          const std::string& state,
                                                          const std::string& note, double now);
// Records that the credential was shown; false when it already was (shown exactly once).
[[nodiscard]] Expected<bool> markCredentialShown(Database& db, std::int64_t id, double now);

// "matmul,graph" as stored and back.
std::string joinComputations(const std::vector<std::string>& computations);

} // namespace goblin::labnode::access
