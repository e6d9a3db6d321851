// Volunteers lab staff banned (table volunteer_bans, with the time and the reason) and what
// `volunteers show` prints about one. Written by the staff commands (their own connection); read
// by BanWatch on the node's core thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "goblin/core/error.hpp"
#include "store/database.hpp"

namespace goblin::labnode {

// The quarantine reason of a ban starts with this; unban lifts only such a quarantine.
inline constexpr const char* kBanReasonPrefix = "banned by lab staff: ";

struct BanRecord {
    std::string volunteerId;
    std::string reason;
    double bannedAt = 0;
};

// NotFound when no such volunteer registered; banning a banned volunteer updates the reason.
[[nodiscard]] Expected<void> banVolunteer(Database& db, const std::string& volunteerId,
                                          const std::string& reason, double now);
// NotFound when it is not banned. Lifts the refusal at hello and the ban's own quarantine.
[[nodiscard]] Expected<void> unbanVolunteer(Database& db, const std::string& volunteerId,
                                            double now);
std::vector<BanRecord> activeBans(Database& db);

struct VolunteerDetail {
    std::string id, backend;
    double createdAt = 0, lastSeen = 0;
    std::int64_t accepted = 0, rejected = 0, auditsPassed = 0, expiries = 0;
    bool approved = false;
    std::optional<double> quarantinedAt;
    std::string quarantineReason;
    std::optional<BanRecord> ban;
    double banLiftedAt = 0; // of the last ban, when it was lifted
};
std::optional<VolunteerDetail> volunteerDetail(Database& db, const std::string& volunteerId);

} // namespace goblin::labnode
