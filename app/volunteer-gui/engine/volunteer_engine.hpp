// The volunteer's engine, with no widgets: connects to one lab node (reconnecting with back-off),
// says hello with its capabilities, computes the tasks it receives on a compute thread, and sends
// the results back. Engine state lives on the io_context's single thread; compute runs on its own
// thread and only posts back. The headless binary and (later) the Qt app drive the same engine.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include "goblin/compute/backend.hpp"
#include "goblin/net/limits.hpp"
#include "goblin/net/ws_connection.hpp"
#include "goblin/net/ws_url.hpp"
#include "volunteer_identity.hpp"

namespace goblin::volunteer {

struct EngineSettings {
    std::string nodeUrl;
    net::WsUrl url;
    std::filesystem::path configDir;
    int threads = 0;
    int slots = 2;
    std::int64_t memoryBytes = 0;
    net::Limits limits;
};

struct EngineCounters {
    std::int64_t computed = 0, accepted = 0, rejected = 0, stale = 0, failed = 0;
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

    boost::asio::io_context& m_io;
    EngineSettings m_settings;
    std::unique_ptr<compute::Backend> m_backend;
    LogSink m_log;
    IdentityFile m_identityFile;
    boost::asio::thread_pool m_compute{1};
    boost::asio::steady_timer m_reconnectTimer;
    std::shared_ptr<net::WsConnection> m_connection;
    std::uint64_t m_generation = 0;
    std::chrono::milliseconds m_backoff{250};
    EngineCounters m_counters;
    EngineExit m_exit = EngineExit::Running;
    bool m_usedIdentity = false;
};

} // namespace goblin::volunteer
