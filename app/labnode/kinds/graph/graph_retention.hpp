// What happens to a graph job's data (inputs and per-task outputs) once its researcher released
// it: deleted at once, or — when it was delivered, its outputs rest on replica agreement somewhere
// and the lab keeps data for audits (`--audit-retention-hours`) — kept so that a volunteer
// quarantined later can still have the job rechecked (state 'retained', reported to the researcher
// as released), then deleted once the retention has passed since the job finished. A release the
// database could not record (a full disk) is tried again at the next release and at the hourly
// prune, so that a failed round's boundary values do not outlive the full disk. Core thread; a
// steady timer deletes what is due every hour, and at start().
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "goblin/core/error.hpp"
#include "node/node_context.hpp"

namespace goblin::labnode {

enum class ReleaseOutcome { Deleted, Retained };

class GraphRetention {
public:
    GraphRetention(NodeContext& context, double retentionSeconds);

    void start();
    void stop() { m_timer.cancel(); }
    // The job (done or failed) was released: records it and deletes or keeps its data (after the
    // releases that failed before, tried again). On failure it is tried again later.
    Expected<ReleaseOutcome> release(const std::string& jobId);
    // Deletes the data of retained jobs whose retention has passed.
    void prune();
    // Deletes the job's inputs and task outputs now (a cancel, a purge), whatever its state.
    void deleteData(const std::string& jobId);
    // Told at every prune the time before which a job must have finished for its retention to
    // have passed (another kind's data kept for the same audits: a training job's).
    void addPruneListener(std::function<void(double finishedBefore)> listener) {
        m_pruneListeners.push_back(std::move(listener));
    }

private:
    void schedule();
    Expected<ReleaseOutcome> releaseNow(const std::string& jobId);
    void releaseAgain();

    NodeContext& m_context;
    double m_retentionSeconds;
    boost::asio::steady_timer m_timer;
    std::set<std::string> m_unreleased; // releases the database could not record
    std::vector<std::function<void(double)>> m_pruneListeners;
};

} // namespace goblin::labnode
