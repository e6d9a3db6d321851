// How researchers and lab staff manage jobs once submitted (docs/protocol.md, "Cancelling and
// listing jobs"): a researcher's `cancel` and `list_jobs` (its own jobs only: another
// researcher's job is "not found", as for fetch), and the requests lab staff record with
// `goblin-labnode jobs cancel|purge` (job_requests.hpp), carried out at the coordinator's
// two-second staff check. The kinds do the work (JobKind::cancel, purge). Core thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "goblin/net/message.hpp"
#include "node/node_context.hpp"
#include "node/peer_registry.hpp"
#include "work/job_kind.hpp"

namespace goblin::labnode {

class JobControl {
public:
    using KindOfJob = std::function<JobKind*(std::string_view jobId)>;
    using ReplyError = std::function<void(std::uint64_t peer, std::int64_t id, const Error&)>;

    JobControl(NodeContext& context, PeerRegistry& peers, KindOfJob kindOfJob,
               ReplyError replyError)
        : m_context(context), m_peers(peers), m_kindOfJob(std::move(kindOfJob)),
          m_replyError(std::move(replyError)) {}

    // `cancel` and `list_jobs` from a researcher.
    void onCancel(const Peer& researcher, const net::Message& message);
    void onListJobs(const Peer& researcher, const net::Message& message);
    // Carries out what lab staff asked for since the last check and records the outcomes.
    void checkStaffRequests();

    // Finished jobs not released within `seconds` of finishing are purged (serve --retain-hours).
    void setRetention(double seconds) { m_retainSeconds = seconds; }
    // Purges the finished jobs whose retention has passed (at most once a minute of the node's
    // clock; `force` for every call). Called from checkStaffRequests.
    void purgeExpired(bool force = false);

    // Cancels (or purges) `jobId` whoever owns it; the error says why not (a training job's round
    // is cancelled and purged with its training job: group_owner.hpp).
    Expected<void> cancel(const std::string& jobId, const std::string& who);
    Expected<void> purge(const std::string& jobId);

private:
    NodeContext& m_context;
    PeerRegistry& m_peers;
    KindOfJob m_kindOfJob;
    ReplyError m_replyError;
    double m_retainSeconds = 72 * 3600.0;
    double m_lastRetentionCheck = -1e300;
};

// The error a cancelled job's watchers and fetches get: code cancelled, naming who cancelled it.
Error cancelledError(const std::string& jobId, const std::string& who);

} // namespace goblin::labnode
