#include "kinds/graph/graph_retention.hpp"

#include "kinds/graph/graph_blobs.hpp"
#include "kinds/graph/graph_store.hpp"
#include "kinds/graph/job_audit_store.hpp"

namespace goblin::labnode {

GraphRetention::GraphRetention(NodeContext& context, double retentionSeconds)
    : m_context(context), m_retentionSeconds(retentionSeconds), m_timer(context.core) {}

void GraphRetention::start() {
    prune();
    schedule();
}

void GraphRetention::schedule() {
    m_timer.expires_after(std::chrono::hours(1));
    m_timer.async_wait([this](boost::system::error_code ec) {
        if (ec)
            return; // cancelled: the node is stopping (do not touch this)
        prune();
        schedule();
    });
}

Expected<ReleaseOutcome> GraphRetention::release(const std::string& jobId) {
    releaseAgain();
    auto outcome = releaseNow(jobId);
    if (!outcome)
        m_unreleased.insert(jobId);
    return outcome;
}

void GraphRetention::releaseAgain() {
    for (auto it = m_unreleased.begin(); it != m_unreleased.end();) {
        if (!releaseNow(*it)) {
            ++it;
            continue;
        }
        m_context.log("graph job " + *it + " released (its release had failed before)");
        it = m_unreleased.erase(it);
    }
}

Expected<ReleaseOutcome> GraphRetention::releaseNow(const std::string& jobId) {
    Database& db = m_context.store.database();
    // Only delivered outputs are kept for audits: a failed job's (a failed training round's
    // boundary values) were used nowhere.
    const auto row = graphJob(db, jobId);
    const bool keep = m_retentionSeconds > 0 && row && row->state == JobState::Done &&
                      usesReplicaAgreement(db, jobId);
    if (auto ok = setGraphJobState(db, jobId, keep ? JobState::Retained : JobState::Released,
                                   m_context.clock());
        !ok)
        return tl::unexpected(ok.error());
    if (keep)
        return ReleaseOutcome::Retained;
    deleteData(jobId);
    return ReleaseOutcome::Deleted;
}

void GraphRetention::prune() {
    releaseAgain();
    Database& db = m_context.store.database();
    for (const std::string& jobId : retainedJobsDue(db, m_context.clock() - m_retentionSeconds)) {
        if (auto ok = setGraphJobState(db, jobId, JobState::Released, m_context.clock()); !ok) {
            m_context.log.error("graph job " + jobId + ": could not end its retention (" +
                                ok.error().message + ")");
            continue;
        }
        deleteData(jobId);
        m_context.log("graph job " + jobId + ": its retention for audits ended; data deleted");
    }
    for (const auto& listener : m_pruneListeners)
        listener(m_context.clock() - m_retentionSeconds);
}

void GraphRetention::deleteData(const std::string& jobId) {
    Database& db = m_context.store.database();
    const auto job = graphJob(db, jobId);
    if (!job)
        return;
    std::vector<std::string> digests = storedDigests(job->inputs);
    for (const GraphTaskRow& task : graphTasksOf(db, jobId))
        for (std::string& digest : storedDigests(task.outputs))
            digests.push_back(std::move(digest));
    for (const std::string& digest : digests)
        if (!m_context.store.blobInUse(digest, jobId))
            m_context.blobs.remove(digest);
}

} // namespace goblin::labnode
