// What the lab node's role tests share: a fake peer link that records what it was sent, and a
// harness with a core io_context polled by the test, a real worker pool, a SQLite database (in
// memory unless a path is given), a blob store in a temporary folder, an injected clock and the
// log lines. Waiting is by events with a generous deadline, never by elapsed time.
#pragma once

#include <QTemporaryDir>

#include <chrono>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/json.hpp>

#include "node/node_context.hpp"
#include "node/peer_link.hpp"
#include "node/peer_registry.hpp"
#include "store/blob_store.hpp"
#include "store/node_store.hpp"

namespace goblin::labnode::testing {

class FakePeerLink final : public PeerLink {
public:
    void send(net::Message message) override {
        std::lock_guard lock(m_mutex);
        m_sent.push_back(std::move(message));
    }
    void close(const Error& reason) override {
        std::lock_guard lock(m_mutex);
        m_closed = reason;
    }
    void allowTensors() override { m_tensorsAllowed = true; }
    std::string address() const override { return m_address; }
    void setAddress(std::string address) { m_address = std::move(address); }

    std::vector<net::Message> sent() const {
        std::lock_guard lock(m_mutex);
        return m_sent;
    }
    // The messages of one type, in the order sent.
    std::vector<net::Message> sentOfType(std::string_view type) const {
        std::vector<net::Message> found;
        for (const net::Message& message : sent())
            if (message.type() == type)
                found.push_back(message);
        return found;
    }
    std::size_t count(std::string_view type) const { return sentOfType(type).size(); }
    std::optional<Error> closed() const {
        std::lock_guard lock(m_mutex);
        return m_closed;
    }
    bool tensorsAllowed() const { return m_tensorsAllowed; }
    void clear() {
        std::lock_guard lock(m_mutex);
        m_sent.clear();
    }

private:
    mutable std::mutex m_mutex;
    std::vector<net::Message> m_sent;
    std::optional<Error> m_closed;
    bool m_tensorsAllowed = false;
    std::string m_address = "127.0.0.1";
};

// The files of a node that a test stops and starts again: its database and its blob folder, in a
// fresh temporary folder.
struct NodeFiles {
    QTemporaryDir dir;
    std::string db = dir.filePath("node.db").toStdString();
    std::string blobs = dir.filePath("blobs").toStdString();
};

class NodeHarness {
public:
    explicit NodeHarness(const std::string& dbPath = ":memory:", const std::string& blobDir = {})
        : store(dbPath), blobs(blobDir.empty() ? m_dir.path().toStdString() : blobDir) {}

    NodeContext context() {
        return NodeContext{core,
                           workers,
                           store,
                           blobs,
                           [this] { return now; },
                           [this](const std::string& line) {
                               std::lock_guard lock(m_logMutex);
                               m_logs.push_back(line);
                           },
                           random};
    }

    // Runs the core thread's handlers until `done` holds (workers run meanwhile). False after a
    // generous deadline: the caller's QVERIFY then fails with its own message.
    bool waitUntil(const std::function<bool()>& done) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!done()) {
            if (std::chrono::steady_clock::now() > deadline)
                return false;
            core.restart();
            if (core.poll() == 0)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return true;
    }
    // Runs what is ready on the core thread now.
    void poll() {
        core.restart();
        core.poll();
    }
    // Runs the workers' jobs and the core thread's handlers until neither has any left (timers
    // not yet due aside), so that what the roles posted runs while they are still there: a
    // FakeCluster settles as it goes, before another one on this harness runs. (A bound on the
    // rounds keeps a handler that posts itself again from holding the test forever.)
    void settle() {
        for (int round = 0; round < 10000; ++round) {
            // Each worker thread takes one of these and holds until every one has: the jobs
            // posted before them have all run then.
            std::latch together(kWorkerThreads), finished(kWorkerThreads);
            for (int i = 0; i < kWorkerThreads; ++i)
                boost::asio::post(workers, [&] {
                    together.arrive_and_wait();
                    finished.count_down();
                });
            finished.wait();
            core.restart();
            if (core.poll() == 0)
                return;
        }
    }

    bool logged(std::string_view fragment) const { return logLines(fragment) > 0; }
    // How many log lines hold `fragment`.
    std::size_t logLines(std::string_view fragment) const {
        std::lock_guard lock(m_logMutex);
        std::size_t count = 0;
        for (const std::string& line : m_logs)
            count += line.find(fragment) != std::string::npos ? 1 : 0;
        return count;
    }

    QTemporaryDir m_dir;
    boost::asio::io_context core;
    NodeStore store;
    BlobStore blobs;
    core::SecureRandom random; // thread-safe: workers draw Freivalds vectors from it
    double now = 1000.0;
    static constexpr int kWorkerThreads = 2;
    boost::asio::thread_pool workers{kWorkerThreads}; // joined first when the harness goes

private:
    mutable std::mutex m_logMutex;
    std::vector<std::string> m_logs;
};

// What a role under test is built on: the harness, its context and the peers.
struct RoleRig {
    NodeHarness node;
    NodeContext context = node.context();
    PeerRegistry peers;
};

inline std::int64_t queryInt(NodeStore& store, const std::string& sql) {
    auto query = store.database().prepare(sql);
    if (!query.step().value_or(false))
        return -1;
    return query.columnInt(0);
}

inline net::Message control(boost::json::object fields) {
    return net::Message{std::move(fields), {}};
}

} // namespace goblin::labnode::testing

namespace goblin::labnode::testing {

inline net::Message researcherHello(const std::string& token, int catalog = 3,
                                    int protocol = net::kProtocolVersion) {
    return control({{"type", "hello"},
                    {"id", 1},
                    {"protocol", protocol},
                    {"catalog", catalog},
                    {"token", token}});
}

// A first-contact volunteer hello (identity null) that runs matmul, and graphs when asked. It
// speaks protocol 1 unless told: the node still admits version-1 peers.
inline net::Message volunteerHello(int slots, bool graphs, const std::string& backend = "cpu-eigen",
                                   std::int64_t memoryBytes = std::int64_t{1} << 30,
                                   int protocol = 1) {
    boost::json::array ops{"matmul"};
    if (graphs)
        ops.push_back("graph");
    return control({{"type", "hello"},
                    {"id", 1},
                    {"protocol", protocol},
                    {"catalog", 3},
                    {"identity", nullptr},
                    {"capabilities",
                     {{"backend", backend},
                      {"threads", 1},
                      {"memory_bytes", memoryBytes},
                      {"dtypes", {"f32", "f64"}},
                      {"ops", std::move(ops)},
                      {"slots", slots}}}});
}

} // namespace goblin::labnode::testing
