#include "node/ban_watch.hpp"

#include "store/volunteer_bans.hpp"

namespace goblin::labnode {

void BanWatch::check() {
    std::set<std::string> banned;
    for (const BanRecord& ban : activeBans(m_context.store.database())) {
        banned.insert(ban.volunteerId);
        if (m_banned.count(ban.volunteerId) != 0 || m_trust.isQuarantined(ban.volunteerId))
            continue;
        m_context.log.warn("volunteer " + ban.volunteerId + " BANNED by lab staff: " + ban.reason);
        std::string reason = kBanReasonPrefix;
        reason.append(ban.reason);
        m_trust.quarantine(ban.volunteerId, reason);
    }
    for (const std::string& id : m_banned) {
        if (banned.count(id) != 0)
            continue;
        m_trust.forget(id);
        std::string line = "volunteer ";
        line.append(id).append(" unbanned by lab staff: ");
        if (m_trust.isQuarantined(id))
            line.append("it stays quarantined (").append(m_trust.quarantineReason(id)).append(")");
        else
            line.append("admitted again at its next hello");
        m_context.log(line);
    }
    m_banned = std::move(banned);
}

} // namespace goblin::labnode
