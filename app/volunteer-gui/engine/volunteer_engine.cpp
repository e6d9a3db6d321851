#include "volunteer_engine.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include "goblin/net/json_fields.hpp"
#include "goblin/net/ws_client.hpp"
#include "graph_task.hpp"

namespace goblin::volunteer {

namespace asio = boost::asio;
namespace json = boost::json;

// Carries connection events back to the engine on the io thread, tagged with the connection's
// generation so events of an old connection are ignored.
class VolunteerEngine::Link final : public net::ConnectionHandler {
public:
    Link(VolunteerEngine& engine, std::uint64_t generation) : m_engine(engine), m_generation(generation) {}
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
    : m_io(io), m_settings(std::move(settings)), m_backend(std::move(backend)), m_log(std::move(log)),
      m_identityFile(m_settings.configDir), m_graphExecutors(m_settings.graphDevice,
                                                         [this](const std::string& line) {
                                                             asio::post(m_io, [this, line] { m_log(line); });
                                                         }),
      m_reconnectTimer(io), m_releaseTimer(io) {}

VolunteerEngine::~VolunteerEngine() {
    m_gate.shutdown();
    m_compute.join();
}

void VolunteerEngine::start() { connect(); }

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
    net::connectWebSocket(m_io, m_settings.url, "/v1/volunteer", m_settings.limits,
                          [this](Expected<std::shared_ptr<net::WsConnection>> connection) {
                              asio::post(m_io, [this, connection = std::move(connection)]() mutable {
                                  onConnected(std::move(connection));
                              });
                          });
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
    m_connection->start(std::make_shared<Link>(*this, m_generation));
    sendHello();
}

void VolunteerEngine::sendHello() {
    const auto identity = m_identityFile.load(m_settings.nodeUrl);
    m_usedIdentity = identity.has_value();
    json::value identityJson = nullptr;
    if (identity)
        identityJson = json::object{{"volunteer", identity->volunteerId}, {"secret", identity->secret}};
    json::object capabilities{{"backend", std::string(m_backend->name())},
                              {"threads", m_settings.threads},
                              {"memory_bytes", m_settings.memoryBytes},
                              {"dtypes", json::array{"f32", "f64"}},
                              {"ops", json::array{"matmul", "graph"}},
                              {"slots", m_settings.slots},
                              {"devices", m_settings.devices}};
    m_connection->send(net::Message{json::object{{"type", "hello"},
                                                 {"id", 1},
                                                 {"protocol", m_settings.protocolVersion},
                                                 {"catalog", net::kCatalogVersion},
                                                 {"identity", std::move(identityJson)},
                                                 {"capabilities", std::move(capabilities)}},
                                    {}});
}

void VolunteerEngine::onMessage(std::uint64_t generation, net::Message message) {
    if (generation != m_generation)
        return;
    const std::string_view type = message.type();
    if (type == "welcome")
        return onWelcome(message.control);
    if (type == "task")
        return onTask(std::move(message));
    if (type == "verdict") {
        const std::string verdict = net::requireString(message.control, "verdict").value_or("");
        if (verdict == "accepted")
            ++m_counters.accepted;
        else if (verdict == "rejected")
            ++m_counters.rejected;
        else
            ++m_counters.stale;
        if (verdict != "accepted")
            m_log("task " + std::to_string(net::requireInt(message.control, "task").value_or(0)) +
                  ": verdict " + verdict);
        return;
    }
    m_log("ignoring unexpected message '" + std::string(type) + "' from the node");
}

void VolunteerEngine::onWelcome(const json::object& welcome) {
    auto volunteerId = net::requireString(welcome, "volunteer");
    if (!volunteerId) {
        m_log("the node's welcome has no volunteer id; reconnecting");
        m_connection->close(volunteerId.error());
        return;
    }
    if (auto secret = net::requireString(welcome, "secret")) {
        if (auto ok = m_identityFile.save(m_settings.nodeUrl, {*volunteerId, *secret}); !ok)
            m_log("could not save the volunteer identity: " + ok.error().message);
        m_log("registered with the lab node as " + *volunteerId + " (identity saved in " +
              m_identityFile.path().string() + ")");
    }
    m_backoff = std::chrono::milliseconds(250);
    m_volunteerId = *volunteerId;
    setLink(LinkState::Connected, {});
    m_lastError.clear();
    m_log("connected to " + m_settings.nodeUrl + " as " + *volunteerId + " (" +
          std::string(m_backend->name()) + ", " + std::to_string(m_settings.slots) + " slot(s))");
}

void VolunteerEngine::onTask(net::Message message) {
    auto taskId = net::requireInt(message.control, "task");
    auto attempt = net::requireInt(message.control, "attempt");
    auto op = net::requireString(message.control, "op");
    if (!taskId || !attempt || !op) {
        m_log("malformed task from the node; ignoring it");
        return;
    }
    auto connection = m_connection;
    auto report = [connection, taskId = *taskId, attempt = *attempt](const Error& error) {
        connection->send(net::Message{json::object{{"type", "task_error"},
                                                   {"task", taskId},
                                                   {"attempt", attempt},
                                                   {"code", std::string(wireName(error.code))},
                                                   {"message", error.message}},
                                      {}});
    };
    if (*op == "graph")
        return onGraphTask(*taskId, *attempt, std::move(message));
    // Only catalog ops run here; anything else is refused, never interpreted.
    if (*op != "matmul" || message.tensors.size() != 2) {
        ++m_counters.failed;
        return report(Error{ErrorCode::VersionMismatch, "this volunteer runs catalog ops matmul and graph only"});
    }
    ++m_tasksOpen;
    m_counters.bytesReceived += static_cast<std::int64_t>(message.tensors[0]->byteSize() +
                                                          message.tensors[1]->byteSize());
    asio::post(m_compute, [this, connection, generation = m_generation, taskId = *taskId,
                           attempt = *attempt, a = message.tensors[0], b = message.tensors[1]] {
        compute(connection, generation, taskId, attempt, a, b);
    });
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

void VolunteerEngine::onGraphTask(std::int64_t taskId, std::int64_t attempt, net::Message message) {
    ++m_tasksOpen;
    for (const auto& tensor : message.tensors)
        m_counters.bytesReceived += static_cast<std::int64_t>(tensor->byteSize());
    const json::value* graph = message.control.if_contains("graph");
    asio::post(m_compute, [this, connection = m_connection, generation = m_generation, taskId,
                           attempt, graph = graph ? *graph : json::value(),
                           inputs = std::move(message.tensors)] {
        computeGraph(connection, generation, taskId, attempt, graph, inputs);
    });
}

// Compute thread. A graph task runs whole once the gate lets it start (graph tasks are small:
// the node splits big ones along their batch).
void VolunteerEngine::computeGraph(std::shared_ptr<net::WsConnection> connection,
                                   std::uint64_t generation, std::int64_t taskId,
                                   std::int64_t attempt, const json::value& graph,
                                   const std::vector<net::TensorPtr>& inputs) {
    auto finish = [this](std::int64_t computed, std::int64_t failed, double seconds,
                         std::int64_t bytesSent) { finishTask(computed, failed, seconds, bytesSent); };
    auto stale = [this, generation] { return m_liveGeneration.load() != generation; };
    if (m_gate.enterTask(stale) != GateVerdict::Go)
        return finish(0, 0, 0, 0);
    asio::post(m_io, [this, taskId] { m_running = TaskProgress{taskId, 0}; });
    // Between nodes the task obeys the gate like a matmul between slices: it rests to keep the
    // duty cycle, parks while paused (a pause holds within about one node), and gives up when stale.
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
    auto result = m_graphExecutors.run(graph, inputs, core::graph::GraphLimits{}, hooks);
    if (stopped) // shut down or stale mid-task: the node re-queues it
        return finish(0, 0, 0, 0);
    if (!result) {
        connection->send(net::Message{json::object{{"type", "task_error"},
                                                   {"op", "graph"},
                                                   {"task", taskId},
                                                   {"attempt", attempt},
                                                   {"code", std::string(wireName(result.error().code))},
                                                   {"message", result.error().message}},
                                      {}});
        return finish(0, 1, 0, 0);
    }
    std::vector<net::TensorPtr> outputs;
    std::int64_t bytes = 0;
    for (core::Tensor& output : result->outputs) {
        bytes += static_cast<std::int64_t>(output.byteSize());
        outputs.push_back(std::make_shared<const core::Tensor>(std::move(output)));
    }
    connection->send(net::Message{json::object{{"type", "result"},
                                               {"op", "graph"},
                                               {"task", taskId},
                                               {"attempt", attempt},
                                               {"backend", result->backend},
                                               {"compute_seconds", result->seconds}},
                                  std::move(outputs)});
    finish(1, 0, result->seconds, bytes);
}

// Compute thread. Waits at the gate before the task and between its slices; posts every state
// change to the io thread.
void VolunteerEngine::compute(std::shared_ptr<net::WsConnection> connection,
                              std::uint64_t generation, std::int64_t taskId, std::int64_t attempt,
                              std::shared_ptr<const core::Tensor> a,
                              std::shared_ptr<const core::Tensor> b) {
    auto finish = [this](std::int64_t computed, std::int64_t failed, double seconds,
                         std::int64_t bytesSent) { finishTask(computed, failed, seconds, bytesSent); };
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
        const Error& error = outcome->error();
        connection->send(net::Message{json::object{{"type", "task_error"},
                                                   {"task", taskId},
                                                   {"attempt", attempt},
                                                   {"code", std::string(wireName(error.code))},
                                                   {"message", error.message}},
                                      {}});
        return finish(0, 1, 0, 0);
    }
    SlicedResult& result = **outcome;
    const auto bytes = static_cast<std::int64_t>(result.product.byteSize());
    connection->send(net::Message{
        json::object{{"type", "result"},
                     {"task", taskId},
                     {"attempt", attempt},
                     {"backend", std::string(m_backend->name())},
                     {"compute_seconds", result.busySeconds}},
        {std::make_shared<const core::Tensor>(std::move(result.product))}});
    finish(1, 0, result.busySeconds, bytes);
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
