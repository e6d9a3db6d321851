// The volunteer's engine, with no widgets: connects to one lab node (reconnecting with back-off),
// says hello with its capabilities, and hands the tasks it receives to its TaskRunner, which
// computes them on a compute thread and sends the results back. Engine state lives on the
// io_context's single thread; compute runs on its own thread and only posts back. The headless
// binary and the Qt app (through EngineBridge) drive the same engine.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/array.hpp>

#include "compute_gate.hpp"
#include "engine_status.hpp"
#include "goblin/compute/backend.hpp"
#include "goblin/net/limits.hpp"
#include "goblin/net/messages/volunteer_messages.hpp"
#include "goblin/net/tls_context.hpp"
#include "goblin/net/ws_connection.hpp"
#include "goblin/net/ws_url.hpp"
#include "kept_inputs.hpp"
#include "memory_release.hpp"
#include "task_runner.hpp"
#include "volunteer_identity.hpp"

namespace goblin::volunteer {

struct EngineSettings {
    std::string nodeUrl;
    net::WsUrl url;
    net::TlsContext tls; // verifies a wss:// node (makeClientTlsContext); null: system trust store
    std::filesystem::path configDir;
    int threads = 0;
    int slots = 2;
    std::int64_t memoryBytes = 0;
    // Graph inputs kept by digest between tasks (announced as "input_cache_bytes"; 0: none). The
    // engine keeps at most a quarter of memoryBytes when that is set.
    std::int64_t inputCacheBytes = std::int64_t{256} << 20;
    boost::json::array devices;     // capabilities.devices of the hello
    std::optional<int> graphDevice; // OpenCL device index for graph tasks (else the CPU reference)
                                    // (device_choice.hpp)
    net::Limits limits;
    // Compute thread: sets the process's BLAS thread count when the plan's count changes.
    std::function<void(int threads)> applyCpuThreads;
    // Low: the compute thread runs at nice 19 in the idle I/O class (compute_priority.hpp).
    ComputePriority priority = ComputePriority::Low;
    // Gives freed memory back once no task is held or running for `releaseQuiet`.
    std::function<void()> releaseMemory = releaseFreedMemory;
    std::chrono::milliseconds releaseQuiet{2000};
    // Paused this long, the engine disconnects so the node re-queues the tasks it holds.
    std::chrono::milliseconds releaseAfterPause{30'000};
    // The protocol version the hello offers (tests offer another to see the node refuse it).
    int protocolVersion = net::kProtocolVersion;
};

enum class EngineExit { Running, Stopped, Refused };

class VolunteerEngine {
public:
    using LogSink = std::function<void(const std::string&)>;

    VolunteerEngine(boost::asio::io_context& io, EngineSettings settings,
                    std::unique_ptr<compute::Backend> backend, LogSink log);
    ~VolunteerEngine();

    void start();
    // Closes the connection and stops reconnecting; the io_context then runs out of work.
    void stop();
    EngineExit exitState() const { return m_exit; }
    const EngineCounters& counters() const { return m_counters; }
    // Throttle: takes effect at the compute thread's next slice boundary (well within a second).
    void setPlan(const ComputePlan& plan);
    EngineStatus status() const;

private:
    class Link;

    void connect();
    void onConnected(Expected<std::shared_ptr<net::WsConnection>> connection);
    void onMessage(std::uint64_t generation, net::Message message);
    void onClosed(std::uint64_t generation, const Error& reason);
    void onWelcome(const boost::json::object& welcome);
    void onTask(net::Message message);
    void scheduleReconnect();
    void sendHello();
    void releaseForPause();
    void setLink(LinkState link, std::string error);

    boost::asio::io_context& m_io;
    EngineSettings m_settings;
    std::unique_ptr<compute::Backend> m_backend;
    LogSink m_log;
    IdentityFile m_identityFile;
    EngineCounters m_counters;
    ComputeGate m_gate;
    MemoryRelease m_memoryRelease;
    TaskRunner m_runner;
    boost::asio::steady_timer m_reconnectTimer;
    boost::asio::steady_timer m_releaseTimer;
    bool m_releaseArmed = false;
    bool m_released = false;
    std::shared_ptr<net::WsConnection> m_connection;
    std::uint64_t m_generation = 0;
    std::chrono::milliseconds m_backoff{250};
    std::chrono::milliseconds m_retryDelay{0}; // of the pending reconnect, for the status
    LinkState m_link = LinkState::Connecting;
    std::string m_lastError;
    std::string m_volunteerId;
    KeptInputs m_keptInputs; // of the current connection
    EngineExit m_exit = EngineExit::Running;
    bool m_usedIdentity = false;
};

} // namespace goblin::volunteer
