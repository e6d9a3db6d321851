#include "volunteer_engine.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include "goblin/net/messages/handshake.hpp"
#include "goblin/net/messages/volunteer_messages.hpp"
#include "goblin/net/ws_client.hpp"
#include "graph_task.hpp"

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
      m_graphExecutors(
          m_settings.graphDevice,
          [this](const std::string& line) { asio::post(m_io, [this, line] { m_log(line); }); }),
      m_reconnectTimer(io), m_releaseTimer(io),
      m_keptInputs(m_settings.memoryBytes > 0
                       ? std::min(m_settings.inputCacheBytes, m_settings.memoryBytes / 4)
                       : m_settings.inputCacheBytes) {}

VolunteerEngine::~VolunteerEngine() {
    m_gate.shutdown();
    m_compute.join();
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
    status.tasksOpen = m_tasksOpen;
    status.running = m_running;
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
    m_liveGeneration = ++m_generation; // the old connection's events and tasks are now stale
    m_gate.wake();                     // so held tasks are dropped now, not on resume
    if (m_connection) {
        m_log("paused for " + std::to_string(m_settings.releaseAfterPause.count() / 1000) +
              " s: disconnecting so the lab node hands the held tasks to others");
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
    m_liveGeneration = ++m_generation;
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
        return onGraphTask(std::move(*task));
    }
    auto task = net::parseMatmulTask(message);
    if (!task)
        return report(net::TaskOp::Matmul, task.error());
    m_counters.bytesReceived +=
        static_cast<std::int64_t>(task->a->byteSize() + task->b->byteSize());
    if (computesNow(*task))
        return computeNow(connection, *task);
    ++m_tasksOpen;
    asio::post(m_compute, [this, connection, generation = m_generation, task = std::move(*task)] {
        compute(connection, generation, task.ref.task, task.ref.attempt, task.a, task.b);
    });
}

bool VolunteerEngine::computesNow(const net::MatmulTask& task) const {
    // About a microsecond of arithmetic: less than waking the compute thread and back.
    constexpr std::int64_t kMultiplyAdds = 32 * 32 * 32;
    const core::Shape& a = task.a->shape();
    const core::Shape& b = task.b->shape();
    if (a.size() != 2 || b.size() != 2 || a[0] * a[1] * b[1] > kMultiplyAdds)
        return false;
    // While the compute thread holds a task it owns the backend (and a paused or throttled plan
    // must be obeyed at the gate, in order).
    if (m_tasksOpen != 0 || m_backend->slicesInternally(*task.a, *task.b))
        return false;
    const ComputePlan plan = m_gate.plan();
    return plan.run && !plan.holdNewTasks && plan.dutyPercent >= 100;
}

// Io thread, compute thread idle (computesNow).
void VolunteerEngine::computeNow(const std::shared_ptr<net::WsConnection>& connection,
                                 const net::MatmulTask& task) {
    const auto started = std::chrono::steady_clock::now();
    auto product = m_backend->matmul(*task.a, *task.b);
    const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - started;
    const bool computed = product.has_value();
    const auto bytes = sendMatmulOutcome(connection, task.ref, std::move(product), seconds.count());
    if (!computed) {
        ++m_counters.failed;
        return;
    }
    ++m_counters.computed;
    m_counters.computeSeconds += seconds.count();
    m_counters.bytesSent += bytes;
}

std::int64_t
VolunteerEngine::sendMatmulOutcome(const std::shared_ptr<net::WsConnection>& connection,
                                   const net::TaskRef& ref, Expected<core::Tensor> product,
                                   double seconds) const {
    if (!product) {
        connection->send(net::toMessage(net::TaskError{net::TaskOp::Matmul, ref, product.error()}));
        return 0;
    }
    const auto bytes = static_cast<std::int64_t>(product->byteSize());
    connection->send(net::toMessage(
        net::TaskResult{net::TaskOp::Matmul,
                        ref,
                        std::string(m_backend->name()),
                        seconds,
                        {std::make_shared<const core::Tensor>(std::move(*product))}}));
    return bytes;
}

// Compute thread: a task ended (computed, failed, or dropped with all zeros).
void VolunteerEngine::finishTask(std::int64_t computed, std::int64_t failed, double seconds,
                                 std::int64_t bytesSent) {
    asio::post(m_io, [=, this] {
        --m_tasksOpen;
        m_running.reset();
        m_counters.computed += computed;
        m_counters.failed += failed;
        m_counters.computeSeconds += seconds;
        m_counters.bytesSent += bytesSent;
    });
}

void VolunteerEngine::onGraphTask(net::GraphTask task) {
    ++m_tasksOpen;
    asio::post(m_compute, [this, connection = m_connection, generation = m_generation,
                           task = std::move(task)] { computeGraph(connection, generation, task); });
}

// Compute thread. A graph task runs whole once the gate lets it start (graph tasks are small:
// the node splits big ones along their batch).
void VolunteerEngine::computeGraph(std::shared_ptr<net::WsConnection> connection,
                                   std::uint64_t generation, const net::GraphTask& task) {
    const std::int64_t taskId = task.ref.task, attempt = task.ref.attempt;
    auto finish = [this](std::int64_t computed, std::int64_t failed, double seconds,
                         std::int64_t bytesSent) {
        finishTask(computed, failed, seconds, bytesSent);
    };
    auto stale = [this, generation] { return m_liveGeneration.load() != generation; };
    if (m_gate.enterTask(stale) != GateVerdict::Go)
        return finish(0, 0, 0, 0);
    asio::post(m_io, [this, taskId] { m_running = TaskProgress{taskId, 0}; });
    // Between nodes the task obeys the gate like a matmul between slices: it rests to keep the
    // duty cycle, parks while paused (a pause holds within about one node), and gives up when
    // stale.
    bool stopped = false;
    auto sliceStart = std::chrono::steady_clock::now();
    reference::GraphRunHooks hooks;
    hooks.beforeNode = [&](std::size_t step, std::size_t steps) {
        const auto now = std::chrono::steady_clock::now();
        if (stopped)
            return false;
        if (step > 0 && now - sliceStart < std::chrono::milliseconds(10))
            return true;
        if (m_gate.betweenSlices(now - sliceStart, stale) != GateVerdict::Go) {
            stopped = true;
            return false;
        }
        const double fraction = static_cast<double>(step) / static_cast<double>(steps);
        asio::post(m_io, [this, taskId, fraction] { m_running = TaskProgress{taskId, fraction}; });
        sliceStart = std::chrono::steady_clock::now();
        return true;
    };
    auto result = m_graphExecutors.run(json::value(task.graph), task.inputs,
                                       core::graph::GraphLimits{}, hooks, task.gemmNodes);
    if (stopped) // shut down or stale mid-task: the node re-queues it
        return finish(0, 0, 0, 0);
    if (!result) {
        connection->send(
            net::toMessage(net::TaskError{net::TaskOp::Graph, {taskId, attempt}, result.error()}));
        return finish(0, 1, 0, 0);
    }
    std::vector<net::TensorPtr> outputs;
    std::int64_t bytes = 0;
    for (core::Tensor& output : result->outputs) {
        bytes += static_cast<std::int64_t>(output.byteSize());
        outputs.push_back(std::make_shared<const core::Tensor>(std::move(output)));
    }
    connection->send(net::toMessage(net::TaskResult{net::TaskOp::Graph,
                                                    {taskId, attempt},
                                                    result->backend,
                                                    result->seconds,
                                                    std::move(outputs)}));
    finish(1, 0, result->seconds, bytes);
}

// Compute thread. Waits at the gate before the task and between its slices; posts every state
// change to the io thread.
void VolunteerEngine::compute(std::shared_ptr<net::WsConnection> connection,
                              std::uint64_t generation, std::int64_t taskId, std::int64_t attempt,
                              std::shared_ptr<const core::Tensor> a,
                              std::shared_ptr<const core::Tensor> b) {
    auto finish = [this](std::int64_t computed, std::int64_t failed, double seconds,
                         std::int64_t bytesSent) {
        finishTask(computed, failed, seconds, bytesSent);
    };
    // A task of a closed connection is no longer leased to us: the node has re-queued it.
    auto stale = [this, generation] { return m_liveGeneration.load() != generation; };
    if (m_gate.enterTask(stale) != GateVerdict::Go)
        return finish(0, 0, 0, 0);
    asio::post(m_io, [this, taskId] { m_running = TaskProgress{taskId, 0}; });
    SlicedRun hooks;
    hooks.applyThreads = m_settings.applyCpuThreads;
    hooks.progress = [this, taskId](double fraction) {
        asio::post(m_io, [this, taskId, fraction] { m_running = TaskProgress{taskId, fraction}; });
    };
    hooks.cancelled = stale;
    auto outcome = slicedMatmul(*m_backend, m_gate, m_tuning, *a, *b, hooks);
    if (!outcome) // shut down or stale mid-task: the node re-queues it
        return finish(0, 0, 0, 0);
    if (!*outcome) {
        sendMatmulOutcome(connection, {taskId, attempt}, tl::unexpected(outcome->error()), 0);
        return finish(0, 1, 0, 0);
    }
    const double busySeconds = (*outcome)->busySeconds;
    const auto bytes = sendMatmulOutcome(connection, {taskId, attempt},
                                         std::move((*outcome)->product), busySeconds);
    finish(1, 0, busySeconds, bytes);
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
