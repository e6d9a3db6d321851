// The matmul kind's in-memory view of running jobs and their tile tasks: the queue, task states,
// re-queueing and completion counts. Leases themselves (holder, deadline) are the Scheduler's.
// No I/O; MatmulJobs mirrors every transition into the NodeStore. Core thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "blob_store.hpp"
#include "column_probe_cache.hpp"
#include "node_store.hpp"

namespace goblin::labnode {

enum class TaskState { Queued, Leased, Verifying, Accepted };

struct TileTask {
    std::int64_t id = 0;
    std::string jobId;
    std::int64_t row0 = 0, col0 = 0, rows = 0, cols = 0;
    TaskState state = TaskState::Queued;
    std::int64_t attempt = 0;        // of the current or last lease
    std::set<std::string> refusedBy; // volunteers whose result for it was rejected
};

struct RunningJob {
    JobRecord record;
    std::shared_ptr<MappedFile> a, b;
    std::int64_t totalTiles = 0;
    std::int64_t acceptedTiles = 0;
    std::shared_ptr<ColumnProbeCache> probes; // shared with the workers that verify its tiles
    // The researcher connection each accepted tile is pushed to (result_tile), 0 for none: the
    // one that submitted it asking for a stream. Not persisted: after a restart nobody streams.
    std::uint64_t streamTo = 0;

    // The inputs as matrices over their mapped blobs; valid while a and b are held.
    core::MatrixView aView() const;
    core::MatrixView bView() const;
};

class JobBook {
public:
    void addJob(RunningJob job, std::vector<TileTask> tasks);
    void removeJob(const std::string& jobId);

    RunningJob* job(const std::string& jobId);
    std::vector<std::int64_t> taskIdsOf(const std::string& jobId) const;
    TileTask* task(std::int64_t taskId);
    bool hasQueued() const { return !m_queue.empty(); }

    // Takes the first queued task this volunteer may compute off the queue (not refused by it,
    // of a dtype it computes when `dtypes` is given, and one `mayTake` allows when given).
    std::optional<std::int64_t>
    takeNextFor(const std::string& volunteerId, const std::set<std::string>* dtypes = nullptr,
                const std::function<bool(std::int64_t)>* mayTake = nullptr);
    // Takes the task off the queue for the node to compute (state Verifying); false when it is
    // not queued or leased (accepted, or already being verified).
    bool takeForNode(std::int64_t taskId);
    void markLeased(std::int64_t taskId, std::int64_t attempt);
    // Back to the front of the queue (a lost lease, a rejected result, a failed verification).
    void requeue(std::int64_t taskId);
    void refuse(std::int64_t taskId, const std::string& volunteerId);
    // Marks accepted; returns true when that completed the task's job.
    bool accept(std::int64_t taskId);

private:
    std::map<std::string, RunningJob> m_jobs;
    std::unordered_map<std::int64_t, TileTask> m_tasks;
    std::deque<std::int64_t> m_queue;
};

} // namespace goblin::labnode
