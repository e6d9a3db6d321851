// Per-volunteer trust: how much extra checking a volunteer's results get — never whether they are
// checked. A new identity's graph results are all audited by the node until it has passed
// `probationAudits` audits; then the audit rate falls with its history but never below the floor;
// lease expiries cost it audits; a volunteer caught once (any rejected result) is quarantined for
// good and listeners re-decide what it touched. Backed by volunteer_trust. Core thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "node/node_context.hpp"
#include "store/trust_store.hpp"
#include "work/verdict.hpp"

namespace goblin::labnode {

struct TrustSettings {
    std::int64_t probationAudits = 10; // audits a new identity passes before it is sampled
    // The smallest audit rate of the most trusted volunteer. 1: the node checks every agreed task
    // before its output is used (docs/verification.md, "Graph tasks" 5: a colluding pair past
    // probation gets nothing through); lower trades that for node compute.
    double auditFloor = 1.0;
    double sharedAddressRate = 0.5; // the least rate when a task's replicas share an address
    std::int64_t expiryPenalty = 2; // audits passed that one lease expiry cancels
    // The share of audits that recompute the whole task; the others are cheap (Freivalds on the
    // heavy nodes' witnesses, the rest recomputed): docs/verification.md, "Graph tasks".
    double fullAuditShare = 0.1;
};

class TrustBook {
public:
    using QuarantineListener =
        std::function<void(const std::string& volunteerId, const std::string& reason)>;

    TrustBook(NodeContext& context, TrustSettings settings);

    // The share of tasks the node audits when these volunteers agree on them.
    double auditRate(const std::vector<std::string>& volunteers, bool sharedAddress);
    // Draws from the CSPRNG whether to audit such a task: volunteers cannot predict it.
    bool chooseAudit(const std::vector<std::string>& volunteers, bool sharedAddress);

    bool isQuarantined(const std::string& volunteerId);
    std::string quarantineReason(const std::string& volunteerId);

    // After a verdict committed: node-decided acceptances build history, any rejection quarantines.
    void onVerdict(const VerdictRecord& verdict);
    void onExpired(const std::string& volunteerId);
    void quarantine(const std::string& volunteerId, const std::string& reason);
    void addQuarantineListener(QuarantineListener listener);
    // Drops the cached record so the next look-up reads volunteer_trust again (after lab staff
    // lifted a ban, which lifts the ban's quarantine in the database).
    void forget(const std::string& volunteerId) { m_records.erase(volunteerId); }
    // Called at once when a volunteer is caught, before any listener: marks its connections so
    // nothing gives it more work meanwhile (the listeners run later, on core).
    void setOnCaught(std::function<void(const std::string& volunteerId)> onCaught) {
        m_onCaught = std::move(onCaught);
    }

    const TrustSettings& settings() const { return m_settings; }

private:
    TrustRecord& recordOf(const std::string& volunteerId);
    double rateOf(const std::string& volunteerId);

    NodeContext& m_context;
    TrustSettings m_settings;
    std::map<std::string, TrustRecord> m_records; // a cache of volunteer_trust
    std::vector<QuarantineListener> m_listeners;
    std::function<void(const std::string&)> m_onCaught;
};

// Methods whose verdict the node decided from its own computation (an audit, a tie-break, a task
// it computed itself): an acceptance by one of them is history a volunteer can be trusted on.
bool isNodeDecided(std::string_view method);

} // namespace goblin::labnode
