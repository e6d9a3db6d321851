#include "volunteer_engine.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include "goblin/net/json_fields.hpp"
#include "goblin/net/ws_client.hpp"

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
      m_identityFile(m_settings.configDir), m_reconnectTimer(io) {}

VolunteerEngine::~VolunteerEngine() { m_compute.join(); }

void VolunteerEngine::start() { connect(); }

void VolunteerEngine::stop() {
    if (m_exit == EngineExit::Running)
        m_exit = EngineExit::Stopped;
    m_reconnectTimer.cancel();
    if (m_connection)
        m_connection->closeNormally();
    m_connection.reset();
}

void VolunteerEngine::connect() {
    if (m_exit != EngineExit::Running)
        return;
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
        return scheduleReconnect();
    }
    if (m_exit != EngineExit::Running) {
        (*connection)->closeNormally();
        return;
    }
    m_connection = *connection;
    m_connection->start(std::make_shared<Link>(*this, ++m_generation));
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
                              {"ops", json::array{"matmul"}},
                              {"slots", m_settings.slots}};
    m_connection->send(net::Message{json::object{{"type", "hello"},
                                                 {"id", 1},
                                                 {"protocol", net::kProtocolVersion},
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
    // Only catalog ops run here; anything else is refused, never interpreted.
    if (*op != "matmul" || message.tensors.size() != 2) {
        ++m_counters.failed;
        return report(Error{ErrorCode::VersionMismatch, "this volunteer runs only catalog op matmul"});
    }
    asio::post(m_compute, [this, connection, report, taskId = *taskId, attempt = *attempt,
                           a = message.tensors[0], b = message.tensors[1]] {
        const auto started = std::chrono::steady_clock::now();
        auto product = m_backend->matmul(*a, *b);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (!product) {
            report(product.error());
            asio::post(m_io, [this] { ++m_counters.failed; });
            return;
        }
        connection->send(net::Message{
            json::object{{"type", "result"},
                         {"task", taskId},
                         {"attempt", attempt},
                         {"backend", std::string(m_backend->name())},
                         {"compute_seconds", seconds}},
            {std::make_shared<const core::Tensor>(std::move(*product))}});
        asio::post(m_io, [this] { ++m_counters.computed; });
    });
}

void VolunteerEngine::onClosed(std::uint64_t generation, const Error& reason) {
    if (generation != m_generation)
        return;
    m_connection.reset();
    if (m_exit != EngineExit::Running)
        return;
    if (reason.code == ErrorCode::Banned || reason.code == ErrorCode::VersionMismatch) {
        m_log("the lab node refused this volunteer: " + reason.describe() + "; not retrying");
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
    scheduleReconnect();
}

void VolunteerEngine::scheduleReconnect() {
    if (m_exit != EngineExit::Running)
        return;
    m_reconnectTimer.expires_after(m_backoff);
    m_log("reconnecting in " + std::to_string(m_backoff.count()) + " ms");
    m_backoff = std::min(m_backoff * 2, std::chrono::milliseconds(30'000));
    m_reconnectTimer.async_wait([this](boost::system::error_code ec) {
        if (!ec)
            connect();
    });
}

} // namespace goblin::volunteer
