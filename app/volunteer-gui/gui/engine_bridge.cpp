#include "engine_bridge.hpp"

#include <chrono>
#include <optional>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "device_setup.hpp"
#include "goblin/compute/eigen_cpu_backend.hpp"
#include "goblin/net/tls_context.hpp"
#include "goblin/net/ws_url.hpp"
#include "host_memory.hpp"
#include "volunteer_engine.hpp"
#include "volunteer_state.hpp"

namespace goblin::volunteer {

namespace asio = boost::asio;

namespace {
// How long a stop waits for the engines' close frames to leave before the thread ends anyway.
constexpr std::chrono::milliseconds kCloseGrace{200};
} // namespace

struct EngineBridge::PreparedEngine {
    EngineSettings settings;
    ComputePlan plan;
};

EngineBridge::EngineBridge(QObject* parent) : QObject(parent) {
    m_poll.setInterval(250);
    connect(&m_poll, &QTimer::timeout, this, &EngineBridge::refresh);
}

EngineBridge::~EngineBridge() {
    stop();
}

// The settings of one engine per usable node (a bad address is reported and skipped), each with
// its share of the plan and an even share of the memory lent.
std::vector<EngineBridge::PreparedEngine> EngineBridge::prepare(const BridgeConfig& config) {
    m_config = config;
    m_config.nodes.clear();
    const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    std::vector<PreparedEngine> prepared;
    std::optional<Expected<net::TlsContext>> tls; // made for the first wss:// node, then shared
    for (const BridgeNode& node : config.nodes) {
        EngineSettings settings;
        settings.nodeUrl = node.url.toStdString();
        auto url = net::parseWsUrl(settings.nodeUrl);
        if (!url) {
            Q_EMIT linkError(QStringLiteral("cannot use the lab node address '%1': %2")
                                 .arg(node.url, QString::fromStdString(url.error().message)));
            continue;
        }
        settings.url = *url;
        if (url->tls) {
            if (!tls)
                tls = net::makeClientTlsContext(config.caFile.trimmed().toStdString());
            if (!*tls) {
                Q_EMIT linkError(QStringLiteral("cannot verify the lab node %1: %2")
                                     .arg(node.url, QString::fromStdString(tls->error().message)));
                continue;
            }
            settings.tls = **tls;
        }
        settings.configDir = config.configDir.toStdString();
        settings.slots = config.slots;
        settings.releaseAfterPause = std::chrono::milliseconds(config.releaseAfterPauseMs);
        settings.threads = hardware;
        settings.protocolVersion = config.protocolVersion;
        // The BLAS thread count is process-wide: constructing a CPU backend applies it. Every
        // engine gets the same count (node_shares.hpp), so they never fight over it.
        settings.applyCpuThreads = [](int threads) { compute::EigenCpuBackend{{threads}}; };
        m_config.nodes.push_back(node);
        prepared.push_back({std::move(settings), planForShare(m_plan, node.sharePercent)});
    }
    // As headless: half of what is available unless the volunteer set a cap.
    const std::int64_t memory =
        config.memoryBytes > 0 ? config.memoryBytes : availableMemoryBytes() / 2;
    for (PreparedEngine& engine : prepared)
        engine.settings.memoryBytes = memory / static_cast<std::int64_t>(prepared.size());
    return prepared;
}

void EngineBridge::start(const BridgeConfig& config) {
    stop();
    std::vector<PreparedEngine> prepared = prepare(config);
    if (prepared.empty())
        return;
    m_io = std::make_unique<asio::io_context>(1);
    m_engines = std::make_unique<Engines>();
    m_work = std::make_shared<asio::executor_work_guard<asio::io_context::executor_type>>(
        m_io->get_executor());
    auto log = [this](const std::string& line) {
        QMetaObject::invokeMethod(
            this, [this, text = QString::fromStdString(line)] { Q_EMIT logLine(text); },
            Qt::QueuedConnection);
    };
    DeviceSetupOptions devices;
    devices.devices = config.devices.toStdString();
    devices.cacheDir = defaultCacheDir();
    devices.configDir = config.configDir.toStdString();
    m_thread = std::thread([io = m_io.get(), engines = m_engines.get(), log, devices,
                            prepared = std::move(prepared)]() mutable {
        // The engine takes its devices when it is built: a change of devices restarts the
        // engines (VolunteerApp), and they are set up here, off the GUI thread.
        for (PreparedEngine& engine : prepared) {
            const std::string prefix = "[" + engine.settings.nodeUrl + "] ";
            auto nodeLog = [log, prefix](const std::string& line) { log(prefix + line); };
            devices.memoryBytes = engine.settings.memoryBytes;
            auto setup = setUpDevices(devices, nodeLog);
            if (!setup) { // a malformed device list fails every engine alike
                nodeLog("cannot set up the devices: " + setup.error().message);
                break;
            }
            engine.settings.devices = std::move(setup->devices);
            engine.settings.graphDevice = setup->graphDevice;
            engines->push_back(std::make_unique<VolunteerEngine>(
                *io, engine.settings, std::move(setup->backend), nodeLog));
            engines->back()->setPlan(engine.plan);
            engines->back()->start();
        }
        io->run();
        engines->clear(); // joins the compute threads, already released by stop()
    });
    m_poll.start();
}

void EngineBridge::stop() {
    m_poll.stop();
    if (!m_thread.joinable())
        return;
    // Each engine sends its close frame (the node then knows the volunteer left on purpose);
    // the thread ends when nothing is left to do, or after the grace period at the latest.
    asio::post(
        *m_io, [io = m_io.get(), engines = m_engines.get(), work = std::move(m_work)]() mutable {
            for (auto& engine : *engines)
                engine->stop();
            work.reset();
            auto deadline = std::make_shared<asio::steady_timer>(*io, kCloseGrace);
            deadline->async_wait([io, deadline](const boost::system::error_code&) { io->stop(); });
        });
    m_thread.join();
    m_engines.reset();
    m_io.reset();
}

void EngineBridge::setPlan(const ComputePlan& plan) {
    m_plan = plan;
    postPlans();
}

void EngineBridge::setShares(const std::vector<int>& percents) {
    for (std::size_t i = 0; i < m_config.nodes.size() && i < percents.size(); ++i)
        m_config.nodes[i].sharePercent = percents[i];
    postPlans();
}

ComputePlan EngineBridge::planOf(std::size_t index) const {
    if (index >= m_config.nodes.size())
        return m_plan;
    return planForShare(m_plan, m_config.nodes[index].sharePercent);
}

void EngineBridge::postPlans() {
    if (!m_thread.joinable())
        return;
    std::vector<ComputePlan> plans;
    for (std::size_t i = 0; i < m_config.nodes.size(); ++i)
        plans.push_back(planOf(i));
    asio::post(*m_io, [engines = m_engines.get(), plans] {
        for (std::size_t i = 0; i < engines->size() && i < plans.size(); ++i)
            (*engines)[i]->setPlan(plans[i]);
    });
    refresh();
}

void EngineBridge::refresh() {
    if (!m_thread.joinable())
        return;
    std::vector<NodeStatus> nodes;
    for (const BridgeNode& node : m_config.nodes)
        nodes.push_back(NodeStatus{node.url, node.sharePercent, {}});
    asio::post(*m_io, [this, engines = m_engines.get(), nodes]() mutable {
        // An engine whose devices are still being set up reports "connecting".
        for (std::size_t i = 0; i < engines->size() && i < nodes.size(); ++i)
            nodes[i].engine = (*engines)[i]->status();
        QMetaObject::invokeMethod(
            this,
            [this, nodes] {
                Q_EMIT nodesChanged(nodes);
                Q_EMIT statusChanged(combinedStatus(nodes));
            },
            Qt::QueuedConnection);
    });
}

} // namespace goblin::volunteer
