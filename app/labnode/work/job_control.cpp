#include "work/job_control.hpp"

#include "goblin/net/json_fields.hpp"
#include "goblin/net/messages/job_control_messages.hpp"
#include "goblin/net/messages/researcher_messages.hpp"
#include "staff/job_listing.hpp"
#include "store/job_requests.hpp"

namespace goblin::labnode {

Error cancelledError(const std::string& jobId, const std::string& who) {
    std::string message = "job ";
    message.append(jobId).append(" was cancelled by ").append(who);
    return Error{ErrorCode::Cancelled, std::move(message)};
}

Expected<void> JobControl::cancel(const std::string& jobId, const std::string& who) {
    JobKind* kind = m_kindOfJob(jobId);
    const auto job = findJob(m_context.store.database(), jobId);
    if (!kind || !job)
        return makeError(ErrorCode::NotFound, "no job " + jobId);
    if (job->owner.owned())
        return tl::unexpected(job->owner.refusal(jobId, "cancel"));
    if (job->state != "running")
        return makeError(ErrorCode::InvalidInput, "job " + jobId + " is " + job->state +
                                                      ": only a running job is cancelled");
    return kind->cancel(jobId, who);
}

Expected<void> JobControl::purge(const std::string& jobId) {
    JobKind* kind = m_kindOfJob(jobId);
    const auto job = findJob(m_context.store.database(), jobId);
    if (!kind || !job)
        return makeError(ErrorCode::NotFound, "no job " + jobId);
    if (job->owner.owned())
        return tl::unexpected(job->owner.refusal(jobId, "purge"));
    if (job->state == "running")
        return makeError(ErrorCode::InvalidInput, "job " + jobId +
                                                      " is running: cancel it first (jobs cancel " +
                                                      jobId + ")");
    if (auto ok = kind->purge(jobId); !ok)
        return ok;
    m_context.log("job " + jobId + " purged: its data and its records are deleted");
    return {};
}

void JobControl::onCancel(const Peer& researcher, const net::Message& message) {
    auto cancel = net::parseCancel(message.control);
    if (!cancel)
        return m_replyError(researcher.id, net::requestId(message.control), cancel.error());
    const auto job = findJob(m_context.store.database(), cancel->job);
    // Another researcher's job is "not found" too: job ids reveal nothing.
    if (!job || job->researcherId != researcher.researcherId)
        return m_replyError(researcher.id, cancel->id,
                            Error{ErrorCode::NotFound, "no job " + cancel->job});
    if (job->owner.owned())
        return m_replyError(researcher.id, cancel->id, job->owner.refusal(cancel->job, "cancel"));
    if (job->state == "released" || job->state == "retained")
        return m_replyError(researcher.id, cancel->id,
                            Error{ErrorCode::NotFound, "no job " + cancel->job});
    if (job->state != "cancelled")
        if (auto ok = this->cancel(cancel->job, "its researcher"); !ok)
            return m_replyError(researcher.id, cancel->id, ok.error());
    m_peers.send(researcher.id,
                 net::toMessage(net::Cancelled{cancel->id, cancel->job, "cancelled"}));
}

void JobControl::onListJobs(const Peer& researcher, const net::Message& message) {
    auto list = net::parseListJobs(message.control);
    if (!list)
        return m_replyError(researcher.id, net::requestId(message.control), list.error());
    net::JobList reply{list->id, {}};
    for (const JobListing& job :
         listJobsOf(m_context.store.database(), researcher.researcherId, net::kMaxListedJobs))
        reply.jobs.push_back(net::JobListEntry{job.id, job.kind,
                                               job.state == "retained" ? "released" : job.state,
                                               job.tasksDone, job.tasks, job.createdAt});
    m_peers.send(researcher.id, net::toMessage(reply));
}

void JobControl::purgeExpired(bool force) {
    const double now = m_context.clock();
    if (!force && now - m_lastRetentionCheck < 60)
        return;
    m_lastRetentionCheck = now;
    for (const std::string& jobId :
         finishedJobsBefore(m_context.store.database(), now - m_retainSeconds, 100)) {
        if (auto ok = purge(jobId); !ok)
            m_context.log.error("job " + jobId +
                                ": its retention (--retain-hours) ended, but it was " +
                                "not purged: " + ok.error().message);
        else
            m_context.log("job " + jobId + " was not fetched within --retain-hours of finishing");
    }
}

void JobControl::checkStaffRequests() {
    purgeExpired();
    Database& db = m_context.store.database();
    for (const JobRequestRow& request : pendingJobRequests(db)) {
        const bool cancelling = request.action == JobAction::Cancel;
        auto done = cancelling ? cancel(request.jobId, "lab staff") : purge(request.jobId);
        if (!done)
            m_context.log.warn(std::string("lab staff's ") + (cancelling ? "cancel" : "purge") +
                               " of job " + request.jobId + " refused: " + done.error().message);
        if (auto ok = finishJobRequest(db, request.id, done ? "ok" : done.error().message,
                                       m_context.clock());
            !ok)
            m_context.log.error("could not record the outcome of a staff request (" +
                                ok.error().message + ")");
    }
}

} // namespace goblin::labnode
