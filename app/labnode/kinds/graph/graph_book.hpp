// The graph kind's in-memory view of its jobs and tasks: replicas received, who was involved and
// decided outputs, with each task's state, wanted opinions and attempts on the task engine
// (work/task_graph.hpp). No I/O beyond loading a reloaded task's stored outputs; leases themselves
// are the Scheduler's. Core thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "goblin/verify/replica_referee.hpp"
#include "kinds/graph/graph_chunks.hpp"
#include "kinds/graph/graph_store.hpp"
#include "node/peer_registry.hpp"
#include "store/blob_store.hpp"
#include "work/task_graph.hpp"

namespace goblin::labnode {

struct GraphTask {
    std::int64_t id = 0;
    std::string jobId;
    std::size_t chunk = 0;
    std::vector<verify::Replica> replicas;
    std::vector<std::uint64_t> replicaPeers;
    std::set<std::string> involved;  // volunteers with a replica, lease or failure
    std::set<std::string> addresses; // the network addresses they took it from
    bool judging = false;
    bool nodeComputing = false;
    bool audited = false;     // the node recomputes it although the volunteers agreed
    bool tiebreak = false;    // the node recomputes it because the volunteers disagreed
    bool redeciding = false;  // decided, and rechecked because a volunteer of it was quarantined
    bool nodeOutputs = false; // its decided outputs are the node's own computation
    // Attempts leased with omit_witnesses whose result has not come (another replica carries
    // the witnesses: docs/protocol.md, "Witnesses from one replica").
    std::set<std::int64_t> withoutWitnesses;
    std::vector<core::Tensor> outputs;
};

struct GraphJob {
    std::string id;
    std::int64_t researcher = 0;
    JobState state = JobState::Running;
    double createdAt = 0;
    GraphSubmission submission;
    std::vector<GraphChunk> chunks;
    std::vector<boost::json::value> chunkGraphs; // the chunks' graphs, ready for task frames
    std::vector<std::int64_t> taskIds;
    std::int64_t done = 0;
    // Its merge on the task engine: a task of type GraphBook::kMergeType, waiting on every task
    // of the job, that the node takes once they are all decided (GraphBook::takeMerge).
    std::int64_t mergeTask = 0;
    std::vector<core::Tensor> result;
    std::int64_t redeciding = 0; // decided tasks being rechecked: the job waits for them
    // Decided stages whose outputs a recheck replaced: their dependents are computed again once
    // none of them is being decided (the job waits for it).
    std::set<std::int64_t> redoPending;
    double verifySeconds = 0; // since this node started
};

// Volunteer opinions a task of the job needs: 2 replicas, or 1 with GraphVerification::Freivalds
// (the node checks every such task itself).
int opinionsWanted(const GraphJob& job);

// The graph tasks a volunteer holds: the inputs and constants of all (`given`), and the most any
// one needs beyond those while it runs (`working`).
struct VolunteerLoad {
    std::int64_t given = 0;
    std::int64_t working = 0;

    VolunteerLoad& operator+=(const VolunteerLoad& other) {
        given += other.given;
        working = std::max(working, other.working);
        return *this;
    }
    std::int64_t bytes() const { return given + working; }
};

class GraphBook {
public:
    // Adds a job with its tasks: accepted ones keep their stored outputs, the others are queued
    // for opinionsWanted(job) opinions once the stages they read are decided. Its tasks' rows
    // come in chunk order.
    GraphJob& add(GraphJob job, const std::vector<GraphTaskRow>& tasks, const BlobStore& blobs);
    void remove(const std::string& jobId);

    GraphJob* job(const std::string& jobId);
    GraphTask* task(std::int64_t taskId);
    GraphJob& jobOf(const GraphTask& task) { return m_jobs.at(task.jobId); }
    const GraphChunk& chunkOf(const GraphTask& task) { return jobOf(task).chunks[task.chunk]; }
    // Every task of every job, in id order.
    std::vector<std::int64_t> taskIds() const;
    // Every loaded job, in id order.
    std::vector<std::string> jobIds() const;

    // Its state on the task engine; settled: being decided or decided, or its job ended.
    TaskState state(const GraphTask& task) const { return m_engine.state(task.id); }
    bool decided(const GraphTask& task) const { return state(task) == TaskState::Decided; }
    bool settled(const GraphTask& task) const;

    // Whether a graph task is queued for volunteers (not a merge or an owner's node task).
    bool hasQueued() const { return m_engine.hasQueued(kTaskType); }
    // One more volunteer opinion is wanted.
    void wantOpinion(const GraphTask& task, std::string_view why);
    // The opinions it still wants are not needed (the node decides with what it has).
    void stopWanting(const GraphTask& task, std::string_view why);
    // Its decision is being taken and recorded: no more opinions are wanted.
    void startDeciding(const GraphTask& task, std::string_view why);
    // That decision was called off before it was recorded: it is judged again.
    void callOff(const GraphTask& task, std::string_view why);
    // Its decision is recorded.
    void markDecided(const GraphTask& task);
    // The tasks that read a decided task's outputs, directly or not, are computed again from
    // its new outputs (TaskGraph::redoDependents); returns them.
    std::vector<std::int64_t> redoDependents(const GraphTask& task, std::string_view why);
    // The tasks that read its outputs, directly or not.
    std::vector<std::int64_t> dependentsOf(const GraphTask& task) const;
    // The tasks that read its outputs directly (the only ones its decision may make ready).
    std::vector<std::int64_t> readersOf(const GraphTask& task) const;
    // Its boundary inputs from the outputs of the stages it reads (all decided).
    Expected<void> fillInputs(const GraphTask& task);
    // The job ended: none of its tasks is leased or decided any more.
    void endJob(const std::string& jobId, std::string_view why);

    // The job's merge: queued once every task of the job is decided; the node takes it to merge
    // their outputs (Queued → Deciding; false when it is not queued: a task is not decided, or
    // the merge is taken already); it is decided with the job's result. A merge taken is called
    // off when a task it merges is rechecked or computed again (back to the queue: the node
    // takes it again once they are decided), and a task computed again sends it back to wait.
    bool takeMerge(const GraphJob& job, std::string_view why);
    bool merging(const GraphJob& job) const;
    void callOffMerge(const GraphJob& job, std::string_view why);
    void mergeDecided(const GraphJob& job);
    const Task* mergeTaskOf(const GraphJob& job) const { return m_engine.task(job.mergeTask); }
    // Whether the volunteer lends enough memory for the task's chunk beside the tasks it holds:
    // a volunteer runs one task at a time and holds the others' inputs and constants meanwhile.
    bool fits(const GraphTask& task, const VolunteerInfo& volunteer,
              const VolunteerLoad& held = {}) const;
    // What a task adds to a volunteer's load (nothing once its job is gone).
    VolunteerLoad loadOf(const GraphTask& task) const;
    // Leases the queued opinion this volunteer should give: a task it was not involved in that
    // fits beside the tasks it holds, preferring one no volunteer on its network
    // address has taken, then one no replica or lease of its backend has seen. nullopt when none.
    // Tasks `mayTake` refuses (the scheduler's filter) are skipped.
    using LeasedOnBackend = std::function<bool(std::int64_t task, const std::string& backend)>;
    std::optional<LeasedTask> leaseFor(const VolunteerInfo& volunteer, const VolunteerLoad& held,
                                       const LeasedOnBackend& leasedOnBackend,
                                       const std::function<bool(std::int64_t task)>& mayTake);

    // The task type graph tasks have on the engine (the replica or checked-alone deciders).
    static constexpr std::string_view kTaskType = "graph-op";
    // The type of a job's merge, a task the node decides (its id is the engine's nodeTaskId()).
    static constexpr std::string_view kMergeType = "graph-merge";

    // The engine the book's tasks live on. A kind whose jobs own groups of graph tasks (the
    // training kind) keeps its own node tasks here, so that they wait on a group's merge.
    TaskGraph& engine() { return m_engine; }

private:
    std::map<std::string, GraphJob> m_jobs;
    std::map<std::int64_t, GraphTask> m_tasks;
    TaskGraph m_engine;
};

} // namespace goblin::labnode
