// The matmul kind's running jobs and their tile tasks. The tasks' states, attempts and queue are
// the task engine's (work/task_graph.hpp); this adds the tiles' geometry, the volunteers whose
// result for a tile was rejected, and the jobs' mapped inputs. Leases themselves (holder,
// deadline) are the Scheduler's. No I/O; MatmulJobs mirrors every transition into the NodeStore.
// Core thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "kinds/matmul/column_probe_cache.hpp"
#include "store/blob_store.hpp"
#include "store/node_store.hpp"
#include "work/task_graph.hpp"

namespace goblin::labnode {

// The task type of a matmul tile (the Freivalds decider's).
inline constexpr std::string_view kTileTaskType = "tile";

struct TileTask {
    std::int64_t id = 0;
    std::string jobId;
    std::int64_t row0 = 0, col0 = 0, rows = 0, cols = 0;
    std::set<std::string> refusedBy; // volunteers whose result for it was rejected
};

// A tile as the store knows it when a job is created or reloaded: its last attempt and whether
// it was accepted before.
struct PlannedTile {
    TileTask tile;
    std::int64_t attempt = 0;
    bool accepted = false;
};

struct RunningJob {
    JobRecord record;
    std::shared_ptr<MappedFile> a, b;
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
    void addJob(RunningJob job, std::vector<PlannedTile> tiles);
    void removeJob(const std::string& jobId);

    RunningJob* job(const std::string& jobId);
    std::vector<std::int64_t> taskIdsOf(const std::string& jobId) const;
    TileTask* task(std::int64_t taskId);
    TaskState state(std::int64_t taskId) const { return m_engine.state(taskId); }
    std::int64_t attempt(std::int64_t taskId) const;
    std::int64_t totalTiles(const std::string& jobId) const { return m_engine.taskCount(jobId); }
    std::int64_t acceptedTiles(const std::string& jobId) const {
        return m_engine.decidedCount(jobId);
    }
    // Every transition of the task, with its cause.
    const std::vector<Transition>& story(std::int64_t taskId) const {
        return m_engine.story(taskId);
    }
    bool hasQueued() const { return m_engine.hasQueued(); }

    // Leases the first queued task this volunteer may compute (not refused by it, of a dtype it
    // computes when `dtypes` is given, and one `mayTake` allows when given) with a fresh attempt.
    std::optional<LeasedTask>
    leaseNextFor(const std::string& volunteerId, const std::set<std::string>* dtypes = nullptr,
                 const std::function<bool(std::int64_t)>* mayTake = nullptr);
    // A result for a leased task is being verified; false when it is not leased.
    bool startVerifying(std::int64_t taskId) {
        return m_engine.startDeciding(taskId, "its result is verified");
    }
    // Takes the task off the queue for the node to compute; false when it is not queued or
    // leased (accepted, or already being verified).
    bool takeForNode(std::int64_t taskId);
    // Back to the front of the queue (a lost lease, a rejected result, a failed verification);
    // anything not leased or being verified is left alone.
    void requeue(std::int64_t taskId, std::string_view why);
    void refuse(std::int64_t taskId, const std::string& volunteerId);
    // Marks a verified task accepted; returns true when that completed the task's job.
    bool accept(std::int64_t taskId);

private:
    TaskGraph m_engine;
    std::map<std::string, RunningJob> m_jobs;
    std::unordered_map<std::int64_t, TileTask> m_tiles;
};

} // namespace goblin::labnode
