// Durable trust of volunteers (table volunteer_trust): audits passed, lease expiries, quarantine.
// Core thread only, like NodeStore.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "goblin/core/error.hpp"
#include "store/database.hpp"

namespace goblin::labnode {

struct TrustRecord {
    std::int64_t auditsPassed = 0;
    std::int64_t expiries = 0;
    std::optional<double> quarantinedAt;
    std::string quarantineReason;
};

TrustRecord loadTrust(Database& db, const std::string& volunteerId);
[[nodiscard]] Expected<void> addAuditPassed(Database& db, const std::string& volunteerId);
[[nodiscard]] Expected<void> addExpiry(Database& db, const std::string& volunteerId);
// Quarantines the volunteer unless it already is; false when it already was.
[[nodiscard]] Expected<bool> quarantineVolunteer(Database& db, const std::string& volunteerId,
                                                 const std::string& reason, double now);

} // namespace goblin::labnode
