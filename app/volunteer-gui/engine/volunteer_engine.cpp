#include "volunteer_engine.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include "goblin/net/messages/handshake.hpp"
#include "goblin/net/messages/volunteer_messages.hpp"
#include "goblin/net/ws_client.hpp"

namespace goblin::volunteer {

namespace asio = boost::asio;
namespace json = boost::json;

// Carries connection events back to the engine on the io thread, tagged with the connection's
// generation so events of an old connection are ignored.
class VolunteerEngine::Link final : public net::ConnectionHandler {
public:
    Link(VolunteerEngine& engine, std::uint64_t generation)
        : m_engine(engine), m_generation(generation) {}
    void onMessage(net::Message message) override {
        m_engine.onMessage(m_generation, std::move(message));
    }
    void onClosed(const Error& reason) override { m_engine.onClosed(m_generation, reason); }

private:
    VolunteerEngine& m_engine;
    std::uint64_t m_generation;
};

VolunteerEngine::VolunteerEngine(asio::io_context& io, EngineSettings settings,
                                 std::unique_ptr<compute::Backend> backend, LogSink log)
    : m_io(io), m_settings(std::move(settings)), m_backend(std::move(backend)),
      m_log(std::move(log)), m_identityFile(m_settings.configDir),
      m_memoryRelease(io, m_settings.releaseMemory, m_settings.releaseQuiet),
      m_runner(io, *m_backend, m_gate, m_counters, m_settings.graphDevice,
               m_settings.applyCpuThreads, m_settings.priority, m_log),
      m_reconnectTimer(io), m_releaseTimer(io),
      m_keptInputs(m_settings.memoryBytes > 0
                       ? std::min(m_settings.inputCacheBytes, m_settings.memoryBytes / 4)
                       : m_settings.inputCacheBytes) {
    m_runner.setBusyHook([this](bool busy) { m_memoryRelease.setBusy(busy); });
}

VolunteerEngine::~VolunteerEngine() {
    m_gate.shutdown();
    m_runner.join();
}

void VolunteerEngine::start() {
    connect();
}

void VolunteerEngine::stop() {
    if (m_exit == EngineExit::Running)
        m_exit = EngineExit::Stopped;
    // A paused compute thread would otherwise wait for a resume that never comes.
    m_gate.shutdown();
    setLink(LinkState::Stopped, {});
    m_reconnectTimer.cancel();
    m_releaseTimer.cancel();
    if (m_connection)
        m_connection->closeNormally();
    m_connection.reset();
}

EngineStatus VolunteerEngine::status() const {
    EngineStatus status;
    status.link = m_link;
    status.lastError = m_lastError;
    status.volunteerId = m_volunteerId;
    status.backend = std::string(m_backend->name());
    status.counters = m_counters;
    status.tasksOpen = m_runner.tasksOpen();
    status.running = m_runner.running();
    status.parked = m_gate.parked();
    if (m_link == LinkState::Disconnected)
        status.retryDelay = m_retryDelay;
    return status;
}

void VolunteerEngine::setLink(LinkState link, std::string error) {
    if (m_link == LinkState::Refused || m_link == LinkState::Stopped)
        return;
    m_link = link;
    if (!error.empty())
        m_lastError = std::move(error);
}

void VolunteerEngine::setPlan(const ComputePlan& plan) {
    m_gate.setPlan(plan);
    if (plan.run) {
        m_releaseTimer.cancel();
        m_releaseArmed = false;
        if (m_released) {
            m_released = false;
            m_log("resumed: reconnecting to the lab node");
            connect();
        }
        return;
    }
    if (m_releaseArmed || m_released || m_exit != EngineExit::Running)
        return;
    m_releaseArmed = true;
    m_releaseTimer.expires_after(m_settings.releaseAfterPause);
    m_releaseTimer.async_wait([this](boost::system::error_code ec) {
        if (!ec)
            releaseForPause();
    });
}

// A long pause: hang up so the node re-queues the tasks held here for other volunteers (rather
// than letting their leases run out), drop those tasks, and stay away until resumed.
void VolunteerEngine::releaseForPause() {
    m_releaseArmed = false;
    if (m_gate.plan().run || m_exit != EngineExit::Running)
        return;
    m_released = true;
    m_reconnectTimer.cancel();
    m_runner.setLiveGeneration(++m_generation); // the old connection's events and tasks are stale
    m_gate.wake();                              // so held tasks are dropped now, not on resume
    if (m_connection) {
        // Held back is not necessarily paused by the volunteer (the throttle waits for idle, the
        // schedule, …): the line says what happens to the work, which may be none.
        const int held = m_runner.tasksOpen();
        const std::string after = "not computing for " +
                                  std::to_string(m_settings.releaseAfterPause.count() / 1000) +
                                  " s";
        m_log(held > 0 ? after + ": disconnecting so the lab node hands the " +
                             std::to_string(held) + " held task(s) to others"
                       : after + " and no task held: waiting for work, disconnected until "
                                 "computing may resume");
        m_connection->closeNormally();
        m_connection.reset();
    }
    setLink(LinkState::Released, {});
}

void VolunteerEngine::connect() {
    if (m_exit != EngineExit::Running || m_released)
        return;
    setLink(LinkState::Connecting, {});
    net::connectWebSocket(
        m_io, m_settings.url, "/v1/volunteer", m_settings.limits,
        [this](Expected<std::shared_ptr<net::WsConnection>> connection) {
            asio::post(m_io, [this, connection = std::move(connection)]() mutable {
                onConnected(std::move(connection));
            });
        },
        m_settings.tls);
}

void VolunteerEngine::onConnected(Expected<std::shared_ptr<net::WsConnection>> connection) {
    if (!connection) {
        m_log("cannot reach the lab node: " + connection.error().message);
        setLink(LinkState::Disconnected,
                "cannot reach the lab node: " + connection.error().message);
        return scheduleReconnect();
    }
    if (m_exit != EngineExit::Running || m_released) {
        (*connection)->closeNormally();
        return;
    }
    m_connection = *connection;
    m_runner.setLiveGeneration(++m_generation);
    m_keptInputs.clear(); // a new connection starts with nothing kept, on both sides
    m_connection->start(std::make_shared<Link>(*this, m_generation));
    sendHello();
}

void VolunteerEngine::sendHello() {
    const auto identity = m_identityFile.load(m_settings.nodeUrl);
    m_usedIdentity = identity.has_value();
    net::VolunteerHello hello;
    hello.protocol = m_settings.protocolVersion;
    hello.catalog = net::kCatalogVersion;
    if (identity)
        hello.identity = net::VolunteerIdentity{identity->volunteerId, identity->secret};
    net::Capabilities& capabilities = hello.capabilities;
    capabilities.backend = std::string(m_backend->name());
    capabilities.threads = m_settings.threads;
    capabilities.memoryBytes = m_settings.memoryBytes;
    capabilities.dtypes = {"f32", "f64"};
    capabilities.ops = {"matmul", "graph"};
    capabilities.slots = m_settings.slots;
    capabilities.devices = m_settings.devices;
    capabilities.inputCacheBytes = m_keptInputs.budgetBytes();
    m_connection->send(net::toMessage(hello));
}

void VolunteerEngine::onMessage(std::uint64_t generation, net::Message message) {
    if (generation != m_generation)
        return;
    const std::string_view type = message.type();
    if (type == "welcome")
        return onWelcome(message.control);
    if (type == "task")
        return onTask(std::move(message));
    if (type == "forget_inputs") {
        if (auto forget = net::parseForgetInputs(message.control))
            return m_keptInputs.forget(forget->digests);
        return m_log("malformed forget_inputs from the node; ignoring it");
    }
    if (type == "verdict") {
        // A verdict that does not parse counts as stale, as one the node gives up on would.
        const auto verdict = net::parseTaskVerdict(message.control);
        const net::Verdict decided = verdict ? verdict->verdict : net::Verdict::Stale;
        if (decided == net::Verdict::Accepted)
            ++m_counters.accepted;
        else if (decided == net::Verdict::Rejected)
            ++m_counters.rejected;
        else
            ++m_counters.stale;
        if (!verdict)
            m_log("malformed verdict from the node: " + verdict.error().message);
        else if (decided != net::Verdict::Accepted)
            m_log("task " + std::to_string(verdict->ref.task) + ": verdict " +
                  std::string(net::wireName(decided)));
        return;
    }
    m_log("ignoring unexpected message '" + std::string(type) + "' from the node");
}

void VolunteerEngine::onWelcome(const json::object& control) {
    auto welcome = net::parseWelcome(control);
    if (welcome && !welcome->volunteerId)
        welcome = makeError(ErrorCode::InvalidMessage, "field 'volunteer' is missing");
    if (!welcome) {
        m_log("the node's welcome is malformed (" + welcome.error().message + "); reconnecting");
        m_connection->close(welcome.error());
        return;
    }
    const std::string& volunteerId = *welcome->volunteerId;
    if (const auto& secret = welcome->secret) {
        if (auto ok = m_identityFile.save(m_settings.nodeUrl, {volunteerId, *secret}); !ok)
            m_log("could not save the volunteer identity: " + ok.error().message);
        m_log("registered with the lab node as " + volunteerId + " (identity saved in " +
              m_identityFile.path().string() + ")");
    }
    m_backoff = std::chrono::milliseconds(250);
    m_volunteerId = volunteerId;
    setLink(LinkState::Connected, {});
    m_lastError.clear();
    m_log("connected to " + m_settings.nodeUrl + " as " + volunteerId + " (" +
          std::string(m_backend->name()) + ", " + std::to_string(m_settings.slots) + " slot(s))");
}

void VolunteerEngine::onTask(net::Message message) {
    const auto ref = net::parseTaskRef(message.control);
    const auto op = net::parseTaskOp(message.control);
    // Without a lease to answer (or an op at all) there is nobody to tell: ignore it.
    if (!ref || (!op && op.error().code != ErrorCode::VersionMismatch)) {
        m_log("malformed task from the node; ignoring it");
        return;
    }
    auto connection = m_connection;
    auto report = [this, connection, ref = *ref](net::TaskOp taskOp, const Error& error) {
        ++m_counters.failed;
        connection->send(net::toMessage(net::TaskError{taskOp, ref, error}));
    };
    // Only catalog ops run here; anything else is refused, never interpreted.
    if (!op)
        return report(net::TaskOp::Matmul,
                      Error{ErrorCode::VersionMismatch,
                            "this volunteer runs catalog ops matmul and graph only"});
    if (*op == net::TaskOp::Graph) {
        auto task = net::parseGraphTask(message);
        if (!task)
            return report(net::TaskOp::Graph, task.error());
        // Resolved on arrival, in the order the node planned the frames.
        auto inputs = m_keptInputs.resolve(*task);
        if (!inputs)
            return report(net::TaskOp::Graph, inputs.error());
        for (const auto& tensor : task->inputs)
            m_counters.bytesReceived += static_cast<std::int64_t>(tensor->byteSize());
        task->inputs = std::move(*inputs);
        task->inputRefs.clear();
        return m_runner.runGraph(connection, std::move(*task));
    }
    auto task = net::parseMatmulTask(message);
    if (!task)
        return report(net::TaskOp::Matmul, task.error());
    m_counters.bytesReceived +=
        static_cast<std::int64_t>(task->a->byteSize() + task->b->byteSize());
    m_runner.runMatmul(connection, std::move(*task));
}

void VolunteerEngine::onClosed(std::uint64_t generation, const Error& reason) {
    if (generation != m_generation)
        return;
    m_connection.reset();
    if (m_exit != EngineExit::Running)
        return;
    if (reason.code == ErrorCode::Banned || reason.code == ErrorCode::VersionMismatch) {
        m_log("the lab node refused this volunteer: " + reason.describe() + "; not retrying");
        setLink(LinkState::Refused, "the lab node refused this volunteer: " + reason.describe());
        m_exit = EngineExit::Refused;
        m_reconnectTimer.cancel();
        return;
    }
    if (reason.code == ErrorCode::Unauthenticated && m_usedIdentity) {
        // The node no longer knows us (e.g. a new database): register afresh next time.
        m_log("the lab node did not accept the saved identity (" + reason.message +
              "); registering again");
        (void)m_identityFile.forget(m_settings.nodeUrl);
    } else {
        m_log("disconnected from the lab node: " + reason.describe());
    }
    setLink(LinkState::Disconnected, "disconnected: " + reason.describe());
    scheduleReconnect();
}

void VolunteerEngine::scheduleReconnect() {
    if (m_exit != EngineExit::Running || m_released)
        return;
    m_reconnectTimer.expires_after(m_backoff);
    m_retryDelay = m_backoff;
    m_log("reconnecting in " + std::to_string(m_backoff.count()) + " ms");
    m_backoff = std::min(m_backoff * 2, std::chrono::milliseconds(30'000));
    m_reconnectTimer.async_wait([this](boost::system::error_code ec) {
        if (!ec)
            connect();
    });
}

} // namespace goblin::volunteer
