// What happens to a graph job's data (inputs and per-task outputs) once its researcher released
// it: deleted at once, or — when its outputs rest on replica agreement somewhere and the lab keeps
// data for audits (`--audit-retention-hours`) — kept so that a volunteer quarantined later can
// still have the job rechecked (state 'retained', reported to the researcher as released), then
// deleted once the retention has passed since the job finished. Core thread; a steady timer
// deletes what is due every hour, and at start().
#pragma once

#include <string>

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
    // The job (done or failed) was released: records it and deletes or keeps its data.
    Expected<ReleaseOutcome> release(const std::string& jobId);
    // Deletes the data of retained jobs whose retention has passed.
    void prune();
    // Deletes the job's inputs and task outputs now (a cancel, a purge), whatever its state.
    void deleteData(const std::string& jobId);

private:
    void schedule();

    NodeContext& m_context;
    double m_retentionSeconds;
    boost::asio::steady_timer m_timer;
};

} // namespace goblin::labnode
