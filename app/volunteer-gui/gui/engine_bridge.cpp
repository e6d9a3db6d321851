#include "engine_bridge.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "goblin/compute/eigen_cpu_backend.hpp"
#include "goblin/net/ws_url.hpp"
#include "host_memory.hpp"
#include "volunteer_engine.hpp"

namespace goblin::volunteer {

namespace asio = boost::asio;

EngineBridge::EngineBridge(QObject* parent) : QObject(parent) {
    m_poll.setInterval(250);
    connect(&m_poll, &QTimer::timeout, this, &EngineBridge::refresh);
}

EngineBridge::~EngineBridge() {
    stop();
}

void EngineBridge::start(const BridgeConfig& config) {
    stop();
    EngineSettings settings;
    settings.nodeUrl = config.nodeUrl.toStdString();
    auto url = net::parseWsUrl(settings.nodeUrl);
    if (!url) {
        Q_EMIT linkError(QStringLiteral("cannot use the lab node address '%1': %2")
                             .arg(config.nodeUrl, QString::fromStdString(url.error().message)));
        return;
    }
    settings.url = *url;
    settings.configDir = config.configDir.toStdString();
    settings.slots = config.slots;
    // As headless: half of what is available unless the volunteer set a cap.
    settings.memoryBytes = config.memoryBytes > 0 ? config.memoryBytes : availableMemoryBytes() / 2;
    settings.releaseAfterPause = std::chrono::milliseconds(config.releaseAfterPauseMs);
    settings.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    // The BLAS thread count is process-wide: constructing a CPU backend applies it.
    settings.applyCpuThreads = [](int threads) { compute::EigenCpuBackend{{threads}}; };

    m_io = std::make_unique<asio::io_context>(1);
    auto log = [this](const std::string& line) {
        QMetaObject::invokeMethod(
            this, [this, text = QString::fromStdString(line)] { Q_EMIT logLine(text); },
            Qt::QueuedConnection);
    };
    auto backend = std::make_unique<compute::EigenCpuBackend>(compute::CpuBackendOptions{0});
    m_engine = std::make_unique<VolunteerEngine>(*m_io, settings, std::move(backend), log);
    m_engine->setPlan(m_plan);
    m_thread = std::thread([io = m_io.get(), engine = m_engine.get()] {
        auto work = asio::make_work_guard(*io);
        engine->start();
        io->run();
    });
    m_poll.start();
}

void EngineBridge::stop() {
    m_poll.stop();
    if (!m_thread.joinable())
        return;
    asio::post(*m_io, [io = m_io.get(), engine = m_engine.get()] {
        engine->stop();
        io->stop();
    });
    m_thread.join();
    m_engine.reset(); // joins the compute thread, already released by stop()
    m_io.reset();
}

void EngineBridge::setPlan(const ComputePlan& plan) {
    m_plan = plan;
    if (!m_thread.joinable())
        return;
    asio::post(*m_io, [engine = m_engine.get(), plan] { engine->setPlan(plan); });
    refresh();
}

void EngineBridge::refresh() {
    if (!m_thread.joinable())
        return;
    asio::post(*m_io, [this, engine = m_engine.get()] {
        QMetaObject::invokeMethod(
            this, [this, status = engine->status()] { Q_EMIT statusChanged(status); },
            Qt::QueuedConnection);
    });
}

} // namespace goblin::volunteer
