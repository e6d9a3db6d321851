// The one class that crosses between Qt and the engines' Asio world. Lives on the GUI thread; owns
// a network thread that runs the io_context and one VolunteerEngine per attached lab node (each
// engine owns its compute thread). The engines are created, driven and destroyed on the network
// thread only: commands go there with asio::post; status and log lines come back as queued calls
// to this object, so every signal is emitted on the GUI thread.
#pragma once

#include <QObject>
#include <QTimer>

#include <memory>
#include <thread>
#include <vector>

#include "compute_gate.hpp"
#include "engine_status.hpp"
#include "goblin/net/limits.hpp"
#include "node_shares.hpp"

namespace boost::asio {
class io_context;
}

namespace goblin::volunteer {

class VolunteerEngine;

struct BridgeNode {
    QString url;
    int sharePercent = 100; // of the volunteer's compute time (node_shares.hpp)
};

struct BridgeConfig {
    std::vector<BridgeNode> nodes;
    QString configDir;
    int slots = 2;
    std::int64_t memoryBytes = 0;     // lent in all, split evenly between the nodes (0: half free)
    int releaseAfterPauseMs = 30'000; // paused this long, hand the held tasks back
    QString devices = QStringLiteral("cpu"); // what computes, as --devices: "cpu,gpu0"
    int protocolVersion = net::kProtocolVersion;
    QString caFile = {}; // verifies wss:// nodes (empty: the system's trust store)
};

class EngineBridge : public QObject {
    Q_OBJECT
public:
    explicit EngineBridge(QObject* parent = nullptr);
    ~EngineBridge() override;

    // (Re)starts one engine per node; the devices are set up on the network thread (opening an
    // OpenCL device takes a while). A bad URL is reported by linkError and that node is skipped.
    void start(const BridgeConfig& config);
    void stop();
    bool running() const { return m_thread.joinable(); }
    // The volunteer-wide plan; each engine runs with its node's share of the duty.
    void setPlan(const ComputePlan& plan);
    ComputePlan plan() const { return m_plan; }
    // Live: new share percentages, one per node of the running config, in its order.
    void setShares(const std::vector<int>& percents);
    // The plan the engine of node `index` runs with.
    ComputePlan planOf(std::size_t index) const;
    const BridgeConfig& config() const { return m_config; }
    // Asks for a status snapshot now (also done every `interval` while running).
    void refresh();
    void setPollInterval(int milliseconds) { m_poll.setInterval(milliseconds); }

Q_SIGNALS:
    void statusChanged(const goblin::volunteer::EngineStatus& combined);
    void nodesChanged(const std::vector<goblin::volunteer::NodeStatus>& nodes);
    void logLine(const QString& line);
    void linkError(const QString& message);

private:
    using Engines = std::vector<std::unique_ptr<VolunteerEngine>>;
    struct PreparedEngine; // an engine's settings and plan, before the network thread builds it
    std::vector<PreparedEngine> prepare(const BridgeConfig& config);
    void postPlans();

    BridgeConfig m_config;
    std::unique_ptr<boost::asio::io_context> m_io;
    std::unique_ptr<Engines> m_engines; // touched on the network thread only
    std::shared_ptr<void> m_work; // keeps the network thread's io_context running until stop()
    std::thread m_thread;
    ComputePlan m_plan;
    QTimer m_poll;
};

} // namespace goblin::volunteer
