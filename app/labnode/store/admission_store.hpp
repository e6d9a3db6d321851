// What the hello desk keeps about admission besides identities: new identities registered per
// network address (for the rate limit) and the volunteers lab staff approved. Core thread only
// (or a staff command with its own connection).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "goblin/core/error.hpp"
#include "store/database.hpp"

namespace goblin::labnode {

std::int64_t registrationsSince(Database& db, const std::string& address, double since);
[[nodiscard]] Expected<void> recordRegistration(Database& db, const std::string& address,
                                                double now);

bool isApproved(Database& db, const std::string& volunteerId);
// Fails with NotFound when no such volunteer registered.
[[nodiscard]] Expected<void> approveVolunteer(Database& db, const std::string& volunteerId,
                                              double now);

struct VolunteerListing {
    std::string id;
    std::string backend;
    double createdAt = 0;
    bool approved = false;
    bool quarantined = false;
    std::int64_t accepted = 0, rejected = 0;
};
std::vector<VolunteerListing> listVolunteers(Database& db);

} // namespace goblin::labnode
