// The researcher desk: routes submit_*, fetch and release to the job kind they concern, and is
// how every kind talks back to researchers — errors, progress (throttled or not), the finished
// job's delivery to whoever watches it, and failures. Core thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "goblin/net/messages/researcher_messages.hpp"
#include "node/node_context.hpp"
#include "node/peer_registry.hpp"
#include "work/job_control.hpp"
#include "work/job_kind.hpp"
#include "work/job_state.hpp"

namespace goblin::labnode {

enum class ProgressPace { Throttled, EveryStep };

class ResearcherDesk {
public:
    ResearcherDesk(NodeContext& context, PeerRegistry& peers)
        : m_context(context), m_peers(peers),
          m_control(
              context, peers, [this](std::string_view jobId) { return kindOfJob(jobId); },
              [this](std::uint64_t peer, std::int64_t id, const Error& error) {
                  replyError(peer, id, error);
              }) {}

    void addKind(JobKind& kind);
    // A message from a researcher whose hello was accepted.
    void onMessage(const Peer& researcher, net::Message message);

    void replyError(std::uint64_t peer, std::int64_t requestId, const Error& error);
    // fetch's answer, for every kind: the job's status, then a running job is watched by the
    // asking connection and any other is handed to `deliver` (which sends what its state allows).
    void answerFetch(std::uint64_t peer, const net::JobStatus& status,
                     const std::function<void()>& deliver);
    // fetch of a cancelled job: its status, then job_failed with code cancelled.
    void answerCancelledFetch(std::uint64_t peer, std::int64_t requestId, const std::string& jobId,
                              std::int64_t done, std::int64_t total);
    // Lab staff's cancel and purge requests (JobControl), at the coordinator's staff check.
    void checkStaffRequests() {
        m_control.checkStaffRequests();
        for (JobKind* kind : m_kinds)
            kind->checkLiveness();
        reportWaiting();
    }
    JobControl& control() { return m_control; }
    // release of a job that still runs is refused: true when it was (and the error sent).
    bool refuseRunningRelease(const ResearcherRequest& request, const std::string& jobId,
                              JobState state);
    void watch(const std::string& jobId, std::uint64_t peer) {
        m_peers.watch(jobId, peer);
        m_watched.insert(jobId);
    }
    // At the staff check: a running job that no connected volunteer can compute (none connected,
    // none computing graph tasks for a graph or training job, none the dtype of a matmul job) is
    // said to wait, once, in the log and in a progress message to its watchers (`waiting`); and
    // again when it computes.
    void reportWaiting();
    void unwatch(const std::string& jobId, std::uint64_t peer) { m_peers.unwatch(jobId, peer); }
    void reportProgress(const std::string& jobId, std::int64_t done, std::int64_t total,
                        ProgressPace pace);
    // The job finished: `deliver` is called once for each connection that watched it.
    void deliverToWatchers(const std::string& jobId,
                           const std::function<void(std::uint64_t)>& deliver);
    void reportFailure(const std::string& jobId, const Error& error);

private:
    JobKind* kindOfJob(std::string_view jobId);
    // check_quota: the job's size against the researcher's quota, before anything is uploaded.
    void answerQuotaCheck(const Peer& researcher, const net::Message& message);
    // upload (a matrix staged in row blocks): false, with the error sent, when the matrix alone is
    // over the researcher's quota or too many of its jobs run.
    bool admitsUpload(const Peer& researcher, const net::Message& message);
    // fetch or release (`action`) the job cannot take, from one lookup of its row: a group of
    // tasks the researcher's training job runs as a round (group_owner.hpp) says which job to
    // act on; a fetch of a job this researcher released says so rather than "no job". True when
    // refused (the error sent).
    bool refuseLifecycleAction(const ResearcherRequest& request, const std::string& jobId,
                               std::string_view action);
    // The kind that answers a message of this type beyond the lifecycle's, if any.
    JobKind* kindRouting(std::string_view type);

    NodeContext& m_context;
    PeerRegistry& m_peers;
    std::vector<JobKind*> m_kinds;
    std::unordered_map<std::string, double> m_lastProgress;
    JobControl m_control;
    std::set<std::string> m_watched;                        // jobs that had a watcher
    std::unordered_map<std::string, std::string> m_waiting; // job -> why it waits
};

} // namespace goblin::labnode
