#include "kinds/graph/delivered_audits.hpp"

#include <algorithm>
#include <set>

#include <boost/asio/post.hpp>

#include "goblin/net/messages/researcher_messages.hpp"
#include "kinds/graph/graph_blobs.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;

DeliveredAudits::DeliveredAudits(NodeContext& context, PeerRegistry& peers, TrustBook& trust,
                                 GraphIntakeSettings settings, OnCorrected onCorrected)
    : m_context(context), m_peers(peers), m_trust(trust), m_settings(std::move(settings)),
      m_onCorrected(std::move(onCorrected)) {}

void DeliveredAudits::recover() {
    for (const JobAuditRow& audit : unfinishedJobAudits(m_context.store.database()))
        m_queue.push_back(audit.id);
    runNext();
}

void DeliveredAudits::onQuarantined(const std::string& volunteerId, const std::string& reason) {
    Database& db = m_context.store.database();
    for (const std::string& jobId : deliveredJobsUsing(db, volunteerId)) {
        JobAuditRow audit{0,
                          jobId,
                          volunteerId,
                          reason,
                          "rechecking",
                          static_cast<std::int64_t>(suspectTasks(db, jobId, volunteerId).size()),
                          0,
                          m_context.clock()};
        auto id = insertJobAudit(db, audit);
        if (!id) {
            m_context.log.error("graph job " + jobId + ": could not record its audit (" +
                                id.error().message + ")");
            continue;
        }
        m_context.log.warn("graph job " + jobId +
                           " (delivered) used results of quarantined volunteer " + volunteerId +
                           ": the node rechecks " + std::to_string(audit.tasks) + " task(s)");
        m_queue.push_back(*id);
    }
    runNext();
}

void DeliveredAudits::runNext() {
    if (m_running || m_queue.empty())
        return;
    const std::int64_t id = m_queue.front();
    m_queue.pop_front();
    Database& db = m_context.store.database();
    for (const JobAuditRow& audit : unfinishedJobAudits(db))
        if (audit.id == id) {
            m_running = true;
            return run(audit);
        }
    runNext(); // finished meanwhile
}

void DeliveredAudits::run(const JobAuditRow& audit) {
    Database& db = m_context.store.database();
    const auto job = graphJob(db, audit.jobId);
    if (!job)
        return finish(audit, "unverifiable", 0, 0);
    // Asked again now: an earlier audit of this job may have corrected some of them already.
    std::vector<SuspectTask> suspects = suspectTasks(db, audit.jobId, audit.volunteerId);
    if (suspects.empty()) {
        // Superseded: an earlier audit (of its partner) already corrected those tasks.
        if (auto ok = deleteJobAudit(db, audit.id); !ok)
            m_context.log.error("graph job " + audit.jobId +
                                ": could not drop a superseded audit (" + ok.error().message + ")");
        m_running = false;
        afterAudit(audit.jobId, false);
        return runNext();
    }
    const auto count = static_cast<std::int64_t>(suspects.size());
    std::vector<GraphTaskRow> tasks = graphTasksOf(db, job->id);
    if (job->state == JobState::Released || !jobDataKept(*job, tasks, m_context.blobs))
        return finish(audit, "unverifiable", count, 0);
    asio::post(m_context.workers, [this, audit, count, job = *job, tasks = std::move(tasks),
                                   suspects = std::move(suspects)] {
        auto recheck = recheckDeliveredTasks(job, tasks, suspects, m_settings, m_context.blobs);
        asio::post(m_context.core, [this, audit, recheck = std::move(recheck), count]() mutable {
            if (!recheck) {
                m_context.log.warn("graph job " + audit.jobId + ": its recheck failed (" +
                                   recheck.error().message + ")");
                return finish(audit, "unverifiable", count, 0);
            }
            apply(audit, *recheck);
        });
    });
}

void DeliveredAudits::apply(const JobAuditRow& audit, const JobRecheck& recheck) {
    Database& db = m_context.store.database();
    std::int64_t corrected = 0;
    std::set<std::string> overturned;
    std::vector<std::string> replaced; // the outputs the corrections replace
    const std::string reason = "delivered job " + audit.jobId + " rechecked by the node after " +
                               audit.volunteerId + " was quarantined";
    auto written = [&]() -> Expected<void> {
        auto transaction = Transaction::begin(db);
        if (!transaction)
            return tl::unexpected(transaction.error());
        for (const TaskRecheck& task : recheck.tasks) {
            if (task.stands)
                continue;
            for (const auto& [attempt, volunteer] :
                 task.inputsReplaced ? std::vector<std::pair<std::int64_t, std::string>>{}
                                     : acceptedReplicas(db, task.taskId)) {
                if (auto ok =
                        overturnGraphVerdict(db, task.taskId, attempt, volunteer,
                                             "delivered-recheck", reason + ": " + task.reason);
                    !ok)
                    return ok;
                overturned.insert(volunteer);
            }
            auto previous = replaceGraphTaskOutputs(db, task.taskId, task.storedOutputs);
            if (!previous)
                return tl::unexpected(previous.error());
            replaced.push_back(std::move(*previous));
            ++corrected;
        }
        if (auto ok = finishJobAudit(db, audit.id, corrected > 0 ? "corrected" : "stands",
                                     static_cast<std::int64_t>(recheck.tasks.size()), corrected,
                                     m_context.clock());
            !ok)
            return ok;
        return transaction->commit();
    }();
    m_running = false;
    if (!written) {
        // The audit stays 'rechecking': a restarted node runs it again.
        m_context.log.error("graph job " + audit.jobId + ": could not record its recheck (" +
                            written.error().message + ")");
        return runNext();
    }
    m_context.log("graph job " + audit.jobId + " (delivered) rechecked by the node: " +
                  (corrected == 0 ? std::string("its outputs stand")
                                  : std::to_string(corrected) + " task(s) corrected"));
    for (const std::string& stored : replaced) // the lies the node's outputs replaced
        deleteUnusedBlobs(m_context.store, m_context.blobs, stored);
    for (const std::string& volunteer : overturned)
        m_trust.quarantine(volunteer, "its accepted result in delivered graph job " + audit.jobId +
                                          " was overturned by the node's recheck");
    afterAudit(audit.jobId, corrected > 0);
    if (corrected > 0)
        for (const OnRechecked& listener : m_rechecked)
            listener(audit.jobId, audit.volunteerId + " was quarantined (" + audit.reason + ")");
    runNext();
}

void DeliveredAudits::finish(const JobAuditRow& audit, const std::string& state, std::int64_t tasks,
                             std::int64_t corrected) {
    Database& db = m_context.store.database();
    if (auto ok = finishJobAudit(db, audit.id, state, tasks, corrected, m_context.clock()); !ok)
        m_context.log.error("graph job " + audit.jobId + ": could not record its audit (" +
                            ok.error().message + ")");
    else
        m_context.log("graph job " + audit.jobId + " (delivered): audit " + state);
    m_running = false;
    afterAudit(audit.jobId, corrected > 0);
    runNext();
}

void DeliveredAudits::afterAudit(const std::string& jobId, bool corrected) {
    Database& db = m_context.store.database();
    const auto job = graphJob(db, jobId);
    if (!job)
        return;
    const std::vector<JobAuditRow> audits = jobAuditsOf(db, jobId);
    const bool settled = std::none_of(audits.begin(), audits.end(), [](const JobAuditRow& audit) {
        return audit.state == "rechecking";
    });
    // The researcher is told once the job's audits have all ended, so a report never says
    // "rechecking" last; a correction still reaches a done job's outputs at once.
    std::vector<std::uint64_t> peers;
    if (settled && !audits.empty())
        peers = m_peers.researcherConnections(job->researcherId, kAuditReportProtocol);
    if (corrected || !peers.empty())
        sendReport(*job, std::move(peers), 0, corrected);
}

void DeliveredAudits::report(std::uint64_t peer, std::int64_t requestId, const GraphJobRow& job) {
    sendReport(job, {peer}, requestId, false);
}

net::AuditReport DeliveredAudits::reportOf(const std::string& jobId, std::int64_t requestId) {
    const std::vector<JobAuditRow> audits = jobAuditsOf(m_context.store.database(), jobId);
    return auditReport(requestId, jobId, jobAuditState(audits), audits);
}

void DeliveredAudits::sendReport(const GraphJobRow& job, std::vector<std::uint64_t> peers,
                                 std::int64_t requestId, bool announceCorrection) {
    net::AuditReport report = reportOf(job.id, requestId);
    const bool anyCorrected =
        std::any_of(report.audits.begin(), report.audits.end(),
                    [](const net::JobAuditEntry& audit) { return audit.corrected > 0; });
    Database& db = m_context.store.database();
    std::vector<GraphTaskRow> tasks = graphTasksOf(db, job.id);
    if (!anyCorrected || job.state == JobState::Released ||
        !jobDataKept(job, tasks, m_context.blobs)) {
        for (std::uint64_t peer : peers)
            m_peers.send(peer, net::toMessage(report));
        return;
    }
    // The outputs as they are now: merged again from the stored task outputs, on a worker.
    asio::post(m_context.workers, [this, job, tasks = std::move(tasks), peers = std::move(peers),
                                   report = std::move(report), announceCorrection]() mutable {
        auto merged = mergeStoredOutputs(job, tasks, m_settings, m_context.blobs);
        asio::post(m_context.core,
                   [this, jobId = job.id, merged = std::move(merged), peers = std::move(peers),
                    report = std::move(report), announceCorrection]() mutable {
                       if (!merged) {
                           m_context.log.error("graph job " + jobId +
                                               ": its corrected outputs cannot be merged (" +
                                               merged.error().message + ")");
                       } else {
                           if (announceCorrection)
                               m_onCorrected(jobId, *merged);
                           for (core::Tensor& output : *merged)
                               report.outputs.push_back(
                                   std::make_shared<const core::Tensor>(std::move(output)));
                       }
                       for (std::uint64_t peer : peers)
                           m_peers.send(peer, net::toMessage(report));
                   });
    });
}

} // namespace goblin::labnode
