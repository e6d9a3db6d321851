#include "kinds/train/train_audit.hpp"

#include <algorithm>
#include <vector>

#include "kinds/graph/job_audit_store.hpp"
#include "kinds/train/rewind_store.hpp"
#include "kinds/train/train_store.hpp"

namespace goblin::labnode {

net::AuditReport trainAuditReport(Database& db, const std::string& jobId, std::int64_t requestId) {
    std::vector<JobAuditRow> audits;
    for (const TrainRoundRow& round : trainRounds(db, jobId))
        for (JobAuditRow& audit : jobAuditsOf(db, round.graphJob)) {
            // A committed round corrected but not trained again: what was delivered may be wrong.
            if (audit.state == "corrected")
                audit.state = "unverifiable";
            audits.push_back(std::move(audit));
        }
    for (const LateCatch& caught : lateCatchesOf(db, jobId))
        for (JobAuditRow& audit : jobAuditsOf(db, caught.graphJob)) {
            if (!caught.ended)
                audit.state = "rechecking";
            else if (!caught.error.empty())
                audit.state = "unverifiable";
            audits.push_back(std::move(audit));
        }
    std::stable_sort(audits.begin(), audits.end(), [](const JobAuditRow& a, const JobAuditRow& b) {
        return a.createdAt < b.createdAt;
    });
    return auditReport(requestId, jobId, jobAuditState(audits), audits);
}

} // namespace goblin::labnode
