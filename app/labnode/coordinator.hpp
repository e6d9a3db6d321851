// The lab node's brain: peers (volunteers and researchers), the hello handshake, job intake,
// leasing tiles to volunteers, verification verdicts, merging and delivery of results.
// Lives on the core thread (one io_context run by one thread), which also owns the NodeStore.
// Heavy work (input checks, blob writes, verification, result reads) runs on the worker pool and
// posts its outcome back to the core thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include "blob_store.hpp"
#include "graph/graph_jobs.hpp"
#include "goblin/net/limits.hpp"
#include "goblin/net/ws_connection.hpp"
#include "goblin/verify/matmul_check.hpp"
#include "job_book.hpp"
#include "node_store.hpp"

namespace goblin::labnode {

enum class PeerRole { Volunteer, Researcher };

struct CoordinatorSettings {
    net::Limits limits;
    double leaseSeconds = 120.0;
    int verificationVectors = 2;
    double graphSampleRate = 0.1; // share of graph tasks the node recomputes itself
    std::int64_t maxGraphTaskBytes = std::int64_t{4} << 30;
};

using Clock = std::function<double()>;        // seconds since the epoch
using LogSink = std::function<void(const std::string&)>;

class Coordinator {
public:
    Coordinator(boost::asio::io_context& core, boost::asio::thread_pool& workers, NodeStore& store,
                BlobStore& blobs, CoordinatorSettings settings, Clock clock, LogSink log);

    // Reloads running jobs from the database and starts the lease timer. Call once, on core.
    void start();
    void stop();

    // Entry points, each called on the core thread.
    void onConnected(std::uint64_t peer, std::shared_ptr<net::WsConnection> connection, PeerRole role);
    void onMessage(std::uint64_t peer, net::Message message);
    void onClosed(std::uint64_t peer, const Error& reason);

private:
    struct Peer {
        std::shared_ptr<net::WsConnection> connection;
        PeerRole role = PeerRole::Researcher;
        bool ready = false;
        std::int64_t researcherId = 0;
        std::set<std::string> watching;
        std::string volunteerId;
        std::string backend;
        int slots = 1;
        std::int64_t memoryBytes = 0;
        std::set<std::string> dtypes;
        std::set<std::int64_t> inFlight;
        int catalog = 1;
        bool graphs = false; // runs graph tasks (catalog ≥ 3 and op "graph")
    };

    void onHello(std::uint64_t id, Peer& peer, const net::Message& message);
    Expected<void> helloVolunteer(Peer& peer, const boost::json::object& hello,
                                  boost::json::object& welcome);
    void onSubmit(std::uint64_t id, Peer& peer, net::Message message);
    void createJob(std::uint64_t id, std::int64_t researcher, std::int64_t requestId,
                   net::TensorPtr a, net::TensorPtr b, std::string aBlob, std::string bBlob,
                   std::optional<std::pair<std::int64_t, std::int64_t>> tile);
    // The job a fetch or release names, when it belongs to this researcher and is not released.
    Expected<JobRecord> ownedJob(const Peer& sender, const boost::json::object& request);
    void onFetch(std::uint64_t id, Peer& peer, const boost::json::object& request);
    void onRelease(std::uint64_t id, Peer& peer, const boost::json::object& request);
    void onResult(std::uint64_t id, Peer& peer, net::Message message);
    void onTaskError(std::uint64_t id, Peer& peer, const boost::json::object& report);
    void onVerified(std::uint64_t volunteerPeer, ResultRecord result);
    void flushVerdicts();
    void applyVerdict(std::uint64_t volunteerPeer, const ResultRecord& result);
    void finishJob(const std::string& jobId);
    void sendResult(std::uint64_t peer, const JobRecord& job, std::int64_t requestId);
    void sendProgress(const RunningJob& job, bool force);
    void pump();
    void expireLeases();
    void scheduleLeaseTimer();
    void recoverJobs();

    Peer* peer(std::uint64_t id);
    void send(std::uint64_t peer, net::Message message);
    void replyError(std::uint64_t peer, std::int64_t requestId, const Error& error);
    void closePeer(std::uint64_t peer, const Error& error);
    int connectedVolunteers(std::int64_t* smallestMemory) const;
    std::vector<GraphVolunteer> graphVolunteers() const;
    GraphVolunteer graphVolunteer(std::uint64_t id, const Peer& peer) const;
    GraphJobs::Hooks graphHooks();

    boost::asio::io_context& m_core;
    boost::asio::thread_pool& m_workers;
    NodeStore& m_store;
    BlobStore& m_blobs;
    CoordinatorSettings m_settings;
    Clock m_clock;
    LogSink m_log;
    JobBook m_book;
    GraphJobs m_graphs;
    boost::asio::steady_timer m_leaseTimer;
    std::unordered_map<std::uint64_t, Peer> m_peers;
    std::unordered_map<std::string, double> m_lastProgress;
    struct VerifiedResult {
        std::uint64_t peer;
        ResultRecord result;
    };
    std::vector<VerifiedResult> m_verified;
    bool m_flushPosted = false;
    std::mt19937_64 m_random;
    bool m_stopped = false;
};

} // namespace goblin::labnode
