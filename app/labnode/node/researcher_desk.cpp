#include "node/researcher_desk.hpp"

#include "goblin/net/json_fields.hpp"
#include "goblin/net/messages/handshake.hpp"
#include "goblin/net/messages/quota_messages.hpp"
#include "goblin/net/messages/researcher_messages.hpp"
#include "goblin/net/messages/upload_messages.hpp"
#include "node/quota_gate.hpp"
#include "staff/human_format.hpp"
#include "staff/job_listing.hpp"

namespace goblin::labnode {

void ResearcherDesk::addKind(JobKind& kind) {
    m_kinds.push_back(&kind);
}

JobKind* ResearcherDesk::kindOfJob(std::string_view jobId) {
    for (JobKind* kind : m_kinds)
        if (kind->ownsJob(jobId))
            return kind;
    return nullptr;
}

void ResearcherDesk::onMessage(const Peer& researcher, net::Message message) {
    const std::string type(message.type());
    const ResearcherRequest request{researcher.id, researcher.researcherId,
                                    net::requestId(message.control)};
    for (JobKind* kind : m_kinds) {
        if (type != kind->submitType())
            continue;
        if (researcher.catalog < kind->minimumCatalog())
            return replyError(researcher.id, request.requestId,
                              Error{ErrorCode::VersionMismatch,
                                    std::string(kind->taskOp()) + " jobs need catalog " +
                                        std::to_string(kind->minimumCatalog()) +
                                        "; this connection said catalog " +
                                        std::to_string(researcher.catalog)});
        // The client asked check_quota before uploading; a job over the quota that came anyway
        // is dropped here, before anything of it is stored.
        if (auto fits = checkQuota(m_context.store.database(), researcher.researcherId,
                                   sizeOfSubmit(message));
            !fits)
            return replyError(researcher.id, request.requestId, fits.error());
        return kind->submit(request, std::move(message));
    }
    if (type == "check_quota")
        return answerQuotaCheck(researcher, message);
    if (type == "upload" && !admitsUpload(researcher, message))
        return;
    if (type == "cancel")
        return m_control.onCancel(researcher, message);
    if (type == "list_jobs")
        return m_control.onListJobs(researcher, message);
    // A message one kind routes (uploads, fetch_rows, train_batch): the kind answers it.
    if (JobKind* kind = kindRouting(type)) {
        if (auto handled = kind->onRouted(request, std::move(message)); !handled)
            replyError(researcher.id, request.requestId, handled.error());
        return;
    }
    if (type != "fetch" && type != "release" && type != "audit")
        return m_peers.close(researcher.id, Error{ErrorCode::InvalidMessage,
                                                  "unexpected message type '" + type + "'"});
    auto jobId = net::requireString(message.control, "job");
    if (!jobId)
        return replyError(researcher.id, request.requestId, jobId.error());
    JobKind* kind = kindOfJob(*jobId);
    if (!kind) // job ids reveal nothing: an unknown one is just not found
        return replyError(researcher.id, request.requestId,
                          Error{ErrorCode::NotFound, "no job " + *jobId});
    if (type != "audit" && refuseLifecycleAction(request, *jobId, type))
        return;
    if (type == "fetch")
        return kind->fetch(request, *jobId);
    if (type == "audit")
        return kind->audit(request, *jobId);
    kind->release(request, *jobId);
}

void ResearcherDesk::answerQuotaCheck(const Peer& researcher, const net::Message& message) {
    auto check = net::parseCheckQuota(message.control);
    if (!check)
        return m_peers.close(researcher.id, check.error());
    auto use = checkQuota(m_context.store.database(), researcher.researcherId,
                          JobSize{check->bytes, check->flops});
    if (!use)
        return replyError(researcher.id, check->id, use.error());
    m_peers.send(researcher.id,
                 net::toMessage(net::Quota{check->id, use->quota.maxBytes, use->quota.maxFlops,
                                           use->quota.maxRunningJobs, use->runningJobs}));
}

bool ResearcherDesk::admitsUpload(const Peer& researcher, const net::Message& message) {
    auto upload = net::parseUpload(message.control);
    if (!upload)
        return true; // the matmul kind refuses it, naming the field
    const auto bytes = static_cast<double>(upload->rows) * static_cast<double>(upload->cols) *
                       static_cast<double>(core::itemSize(upload->dtype));
    if (bytes > 9e18)
        return true; // the matmul kind refuses the shape
    auto fits = checkQuota(m_context.store.database(), researcher.researcherId,
                           JobSize{static_cast<std::int64_t>(bytes), std::nullopt});
    if (fits)
        return true;
    replyError(researcher.id, upload->id, fits.error());
    return false;
}

bool ResearcherDesk::refuseLifecycleAction(const ResearcherRequest& request,
                                           const std::string& jobId, std::string_view action) {
    const auto job = findJob(m_context.store.database(), jobId);
    if (!job || job->researcherId != request.researcherId)
        return false; // the kind answers "no job"
    if (job->owner.owned()) {
        replyError(request.peer, request.requestId, job->owner.refusal(jobId, action));
        return true;
    }
    // A training job kept for the audits of its rounds is fetched again: a late catch may have
    // trained it again (kinds/train/late_catches.hpp).
    const bool gone = job->state == jobStateName(JobState::Released) ||
                      (job->state == jobStateName(JobState::Retained) && job->kind != "train");
    if (action != "fetch" || !gone)
        return false;
    replyError(request.peer, request.requestId,
               Error{ErrorCode::NotFound,
                     "job " + jobId + " was released: its result was delivered and its data " +
                         "deleted at the node (it finished " + utcTime(job->finishedAt) + ")"});
    return true;
}

JobKind* ResearcherDesk::kindRouting(std::string_view type) {
    for (JobKind* kind : m_kinds)
        for (std::string_view routed : kind->routedTypes())
            if (routed == type)
                return kind;
    return nullptr;
}

void ResearcherDesk::reportWaiting() {
    bool anyVolunteer = false;
    bool graphVolunteer = false;
    std::set<std::string> dtypes; // of matmul products some volunteer computes
    for (const Peer* volunteer : m_peers.volunteers()) {
        anyVolunteer = true;
        graphVolunteer = graphVolunteer || volunteer->volunteer.graphs;
        dtypes.insert(volunteer->volunteer.dtypes.begin(), volunteer->volunteer.dtypes.end());
    }
    for (auto it = m_watched.begin(); it != m_watched.end();) {
        const std::string jobId = *it;
        const auto job = findJob(m_context.store.database(), jobId);
        if (!job || job->state != jobStateName(JobState::Running) ||
            m_peers.watchers(jobId).empty()) {
            m_waiting.erase(jobId);
            it = m_watched.erase(it);
            continue;
        }
        ++it;
        std::string why;
        if (!anyVolunteer)
            why = "no volunteer is connected to compute it";
        else if (job->kind != "matmul" && !graphVolunteer)
            why = "no connected volunteer computes graph tasks";
        else if (const auto record =
                     job->kind == "matmul" ? m_context.store.job(jobId) : std::nullopt;
                 record && !dtypes.contains(std::string(core::wireName(record->dtype))))
            why = "no connected volunteer computes " + std::string(core::wireName(record->dtype)) +
                  " products";
        if (JobKind* kind = why.empty() ? kindOfJob(jobId) : nullptr)
            why = kind->whyNothingComputes(jobId);
        if (why == m_waiting[jobId])
            continue;
        m_context.log.write(why.empty() ? LogLevel::Info : LogLevel::Warning,
                            "job " + jobId + (why.empty() ? " computes again" : " waits: " + why));
        m_waiting[jobId] = why;
        for (std::uint64_t peer : m_peers.watchers(jobId))
            m_peers.send(peer,
                         net::toMessage(net::Progress{jobId, job->tasksDone, job->tasks, why}));
    }
}

void ResearcherDesk::replyError(std::uint64_t peer, std::int64_t requestId, const Error& error) {
    m_peers.send(peer, net::toMessage(net::ErrorReply{requestId, error}));
}

void ResearcherDesk::answerFetch(std::uint64_t peer, const net::JobStatus& status,
                                 const std::function<void()>& deliver) {
    m_peers.send(peer, net::toMessage(status));
    if (status.state == jobStateName(JobState::Running))
        watch(status.job, peer);
    else
        deliver();
}

void ResearcherDesk::answerCancelledFetch(std::uint64_t peer, std::int64_t requestId,
                                          const std::string& jobId, std::int64_t done,
                                          std::int64_t total) {
    m_peers.send(peer, net::toMessage(net::JobStatus{requestId, jobId,
                                                     std::string(jobStateName(JobState::Cancelled)),
                                                     done, total}));
    m_peers.send(peer, net::toMessage(net::JobFailed{
                           jobId, Error{ErrorCode::Cancelled, "job " + jobId + " was cancelled"}}));
}

bool ResearcherDesk::refuseRunningRelease(const ResearcherRequest& request,
                                          const std::string& jobId, JobState state) {
    if (state != JobState::Running)
        return false;
    replyError(request.peer, request.requestId,
               Error{ErrorCode::InvalidInput, "job " + jobId + " is still running"});
    return true;
}

void ResearcherDesk::reportProgress(const std::string& jobId, std::int64_t done, std::int64_t total,
                                    ProgressPace pace) {
    if (pace == ProgressPace::Throttled && done < total) {
        const double now = m_context.clock();
        double& last = m_lastProgress[jobId];
        if (now - last < 0.1)
            return;
        last = now;
    }
    if (done >= total)
        m_lastProgress.erase(jobId);
    for (std::uint64_t peer : m_peers.watchers(jobId))
        m_peers.send(peer, net::toMessage(net::Progress{jobId, done, total, {}}));
}

void ResearcherDesk::deliverToWatchers(const std::string& jobId,
                                       const std::function<void(std::uint64_t)>& deliver) {
    m_lastProgress.erase(jobId);
    for (std::uint64_t peer : m_peers.takeWatchers(jobId))
        deliver(peer);
}

void ResearcherDesk::reportFailure(const std::string& jobId, const Error& error) {
    m_lastProgress.erase(jobId);
    for (std::uint64_t peer : m_peers.takeWatchers(jobId))
        m_peers.send(peer, net::toMessage(net::JobFailed{jobId, error}));
}

} // namespace goblin::labnode
