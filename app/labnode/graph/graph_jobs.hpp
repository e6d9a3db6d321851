// Graph jobs at the lab node: intake of submit_graph, tasks computed by two different volunteers
// (different backends where possible) and compared, a third opinion on disagreement, the node's
// own CPU reference as the tiebreak and on a random sample, verdicts recorded, outputs merged and
// delivered (docs/protocol.md, "Graph jobs"). Lives on the core thread like the Coordinator, which
// owns it and hands it the graph-related messages; comparisons and node recomputations run on the
// worker pool and post back. Inputs and each task's accepted outputs are kept in the blob store
// and recorded in the database, so a restarted node resumes graph jobs (start()).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/json/value.hpp>

#include "blob_store.hpp"
#include "node_store.hpp"
#include "goblin/net/message.hpp"
#include "graph_chunks.hpp"
#include "graph_store.hpp"
#include "replica_referee.hpp"

namespace goblin::labnode {

struct GraphJobSettings {
    core::graph::GraphLimits limits;
    double leaseSeconds = 120.0;
    double sampleRate = 0.1; // share of decided tasks the node recomputes itself
    // Largest task, counted as every value of its chunk at once: the node may recompute any task.
    std::int64_t maxTaskBytes = std::int64_t{4} << 30;
    std::uint64_t seed = 0;  // 0: random
};

// A connected volunteer that runs graphs.
struct GraphVolunteer {
    std::uint64_t peer = 0;
    std::string volunteerId;
    std::string backend;
    std::int64_t memoryBytes = 0; // what it lends (0: unknown, not limited)
};

class GraphJobs {
public:
    struct Hooks {
        std::function<void(std::uint64_t peer, net::Message)> send;
        std::function<void()> wake; // tasks were queued: lease them out
        std::function<std::vector<GraphVolunteer>()> volunteers; // connected, graph-capable
        std::function<double()> clock;
        std::function<void(const std::string&)> log;
    };

    GraphJobs(boost::asio::io_context& core, boost::asio::thread_pool& workers, NodeStore& store,
              const BlobStore& blobs, GraphJobSettings settings, Hooks hooks);

    // Reloads unreleased graph jobs: decided tasks keep their outputs, the others are queued again.
    void start();

    static bool isGraphJobId(std::string_view jobId) { return jobId.starts_with("g-"); }
    void submit(std::uint64_t peer, std::int64_t researcher, std::int64_t requestId, net::Message message);
    void fetch(std::uint64_t peer, std::int64_t researcher, std::int64_t requestId, const std::string& jobId);
    void release(std::uint64_t peer, std::int64_t researcher, std::int64_t requestId,
                 const std::string& jobId);

    bool hasQueued() const { return !m_queue.empty(); }
    // The next task replica this volunteer may compute, as the task message to send; the lease is
    // taken. nullopt when none fits.
    std::optional<net::Message> leaseFor(const GraphVolunteer& volunteer);
    int leasesOf(std::uint64_t peer) const;
    void onResult(const GraphVolunteer& volunteer, net::Message message);
    void onTaskError(const GraphVolunteer& volunteer, const boost::json::object& report);
    void onPeerClosed(std::uint64_t peer);
    void expireLeases();

private:
    struct Lease {
        std::uint64_t peer = 0;
        std::string volunteerId;
        std::string backend;
        double deadline = 0;
    };
    struct Task {
        std::int64_t id = 0;
        std::string jobId;
        std::size_t chunk = 0;
        std::vector<Replica> replicas;
        std::vector<std::uint64_t> replicaPeers;
        std::map<std::int64_t, Lease> leases; // by attempt
        std::set<std::string> involved;       // volunteers with a replica, lease or failure
        std::int64_t lastAttempt = 0;
        bool judging = false;
        bool nodeComputing = false;
        bool sampled = false;
        bool decided = false;
        std::vector<core::Tensor> outputs;
    };
    struct Job {
        std::string id;
        std::int64_t researcher = 0;
        std::string state = "running";
        double createdAt = 0;
        GraphSubmission submission;
        std::vector<GraphChunk> chunks;
        std::vector<boost::json::value> chunkGraphs; // the chunks' graphs, ready for task messages
        std::vector<std::int64_t> taskIds;
        std::int64_t done = 0;
        std::set<std::uint64_t> watchers;
        std::vector<core::Tensor> result;
        std::vector<std::string> inputDigests;
        double verifySeconds = 0; // since this node started
    };

    struct Intake {
        GraphSubmission submission;
        std::vector<GraphChunk> chunks;
        std::string request;  // {"graph", "batch"} as submitted
        std::string inputs;   // the stored input tensors
    };
    void createJob(std::uint64_t peer, std::int64_t researcher, std::int64_t requestId, Intake intake);
    Expected<void> resumeJob(const GraphJobRow& row);
    Job& addJob(Job job, const std::vector<GraphTaskRow>& tasks);
    void queueOpinion(Task& task);
    // Whether the volunteer lends enough memory for the task's chunk.
    bool fits(const Task& task, const GraphVolunteer& volunteer) const;
    void judge(Task& task);
    void onJudged(std::int64_t taskId, std::size_t judgedCount, Judgement judgement, double seconds);
    void computeOnNode(Task& task);
    void decide(Task& task, const Judgement& judgement);
    void finishJob(Job& job);
    void deliver(std::uint64_t peer, const Job& job, std::int64_t requestId);
    void sendProgress(const Job& job);
    void failJob(Job& job, const Error& error);
    void dropLease(Task& task, std::int64_t attempt, const std::string& why);
    Job* ownedJob(std::uint64_t peer, std::int64_t researcher, std::int64_t requestId,
                  const std::string& jobId);
    void replyError(std::uint64_t peer, std::int64_t requestId, const Error& error);

    boost::asio::io_context& m_core;
    boost::asio::thread_pool& m_workers;
    NodeStore& m_store;
    Database& m_db;
    const BlobStore& m_blobs;
    GraphJobSettings m_settings;
    Hooks m_hooks;
    std::mt19937_64 m_random;
    std::map<std::string, Job> m_jobs;
    std::map<std::int64_t, Task> m_tasks;
    std::deque<std::int64_t> m_queue; // one entry per wanted volunteer opinion
};

} // namespace goblin::labnode
