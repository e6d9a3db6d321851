// The one class that crosses between Qt and the engine's Asio world. Lives on the GUI thread; owns
// a network thread that runs the io_context and the VolunteerEngine (which owns the compute
// thread). Commands go to the engine with asio::post; status and log lines come back as queued
// calls to this object, so every signal is emitted on the GUI thread.
#pragma once

#include <QObject>
#include <QTimer>

#include <functional>
#include <memory>
#include <thread>

#include "compute_gate.hpp"
#include "engine_status.hpp"

namespace boost::asio {
class io_context;
}

namespace goblin::volunteer {

class VolunteerEngine;

struct BridgeConfig {
    QString nodeUrl;
    QString configDir;
    int slots = 2;
    std::int64_t memoryBytes = 0;
    int releaseAfterPauseMs = 30'000; // paused this long, hand the held tasks back
};

class EngineBridge : public QObject {
    Q_OBJECT
public:
    explicit EngineBridge(QObject* parent = nullptr);
    ~EngineBridge() override;

    // (Re)starts the engine for a node; a bad URL is reported by linkError and nothing runs.
    void start(const BridgeConfig& config);
    void stop();
    bool running() const { return m_thread.joinable(); }
    void setPlan(const ComputePlan& plan);
    ComputePlan plan() const { return m_plan; }
    // Asks for a status snapshot now (also done every `interval` while running).
    void refresh();
    void setPollInterval(int milliseconds) { m_poll.setInterval(milliseconds); }

Q_SIGNALS:
    void statusChanged(const goblin::volunteer::EngineStatus& status);
    void logLine(const QString& line);
    void linkError(const QString& message);

private:
    std::unique_ptr<boost::asio::io_context> m_io;
    std::unique_ptr<VolunteerEngine> m_engine; // used only on the network thread once started
    std::thread m_thread;
    ComputePlan m_plan;
    QTimer m_poll;
};

} // namespace goblin::volunteer
