#include "node/trust_book.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>

namespace goblin::labnode {

bool isNodeDecided(std::string_view method) {
    return method == "node-audit" || method == "node-tiebreak" || method == "node-compute";
}

TrustBook::TrustBook(NodeContext& context, TrustSettings settings)
    : m_context(context), m_settings(settings) {}

TrustRecord& TrustBook::recordOf(const std::string& volunteerId) {
    auto it = m_records.find(volunteerId);
    if (it == m_records.end())
        it = m_records.emplace(volunteerId, loadTrust(m_context.store.database(), volunteerId))
                 .first;
    return it->second;
}

double TrustBook::rateOf(const std::string& volunteerId) {
    const TrustRecord& record = recordOf(volunteerId);
    if (record.quarantinedAt)
        return 1.0;
    const std::int64_t history = record.auditsPassed - m_settings.expiryPenalty * record.expiries;
    const double floor = std::clamp(m_settings.auditFloor, 0.0, 1.0);
    if (m_settings.probationAudits <= 0)
        return floor; // no probation: the lab chose so
    if (history < m_settings.probationAudits)
        return 1.0;
    // After probation the rate halves each time the history doubles, down to the floor.
    return std::max(floor,
                    static_cast<double>(m_settings.probationAudits) / static_cast<double>(history));
}

double TrustBook::auditRate(const std::vector<std::string>& volunteers, bool sharedAddress) {
    double rate = std::clamp(m_settings.auditFloor, 0.0, 1.0);
    for (const std::string& volunteer : volunteers)
        rate = std::max(rate, rateOf(volunteer));
    if (sharedAddress)
        rate = std::max(rate, m_settings.sharedAddressRate);
    return std::min(rate, 1.0);
}

bool TrustBook::chooseAudit(const std::vector<std::string>& volunteers, bool sharedAddress) {
    return m_context.random.chance(auditRate(volunteers, sharedAddress));
}

bool TrustBook::isQuarantined(const std::string& volunteerId) {
    return recordOf(volunteerId).quarantinedAt.has_value();
}

std::string TrustBook::quarantineReason(const std::string& volunteerId) {
    return recordOf(volunteerId).quarantineReason;
}

void TrustBook::onVerdict(const VerdictRecord& verdict) {
    if (verdict.volunteerId.empty())
        return;
    if (!verdict.accepted) {
        if (verdict.method == "quarantine")
            return; // re-decided because it was already caught
        std::string reason = verdict.kind;
        reason.append(" task ").append(std::to_string(verdict.task));
        reason.append(" attempt ").append(std::to_string(verdict.attempt));
        reason.append(" rejected (").append(verdict.method).append("): ").append(verdict.reason);
        return quarantine(verdict.volunteerId, reason);
    }
    if (!isNodeDecided(verdict.method))
        return;
    TrustRecord& record = recordOf(verdict.volunteerId);
    if (auto ok = addAuditPassed(m_context.store.database(), verdict.volunteerId); !ok)
        return m_context.log.error("could not record an audit of " + verdict.volunteerId + ": " +
                                   ok.error().message);
    ++record.auditsPassed;
}

void TrustBook::onExpired(const std::string& volunteerId) {
    TrustRecord& record = recordOf(volunteerId);
    if (auto ok = addExpiry(m_context.store.database(), volunteerId); !ok)
        return m_context.log.error("could not record a lease expiry of " + volunteerId + ": " +
                                   ok.error().message);
    ++record.expiries;
}

void TrustBook::quarantine(const std::string& volunteerId, const std::string& reason) {
    TrustRecord& record = recordOf(volunteerId);
    if (record.quarantinedAt)
        return;
    const double now = m_context.clock();
    auto fresh = quarantineVolunteer(m_context.store.database(), volunteerId, reason, now);
    if (!fresh)
        m_context.log.error("could not record the quarantine of " + volunteerId + " (" +
                            fresh.error().message + "); it is quarantined until the node restarts");
    record.quarantinedAt = now;
    record.quarantineReason = reason;
    m_context.log.warn("volunteer " + volunteerId + " QUARANTINED: " + reason);
    if (m_onCaught)
        m_onCaught(volunteerId);
    // Listeners re-decide what it touched; they run after the verdict that caught it is handled.
    boost::asio::post(m_context.core, [this, volunteerId, reason] {
        for (const QuarantineListener& listener : m_listeners)
            listener(volunteerId, reason);
    });
}

void TrustBook::addQuarantineListener(QuarantineListener listener) {
    m_listeners.push_back(std::move(listener));
}

} // namespace goblin::labnode
