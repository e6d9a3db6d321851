// The status page (GUI thread): the overall state, then one row per device with its activity, the
// current task's progress, tasks done, accepted vs rejected, compute time lent; and which host
// probes work (e.g. "idle detection unavailable").
#pragma once

#include <QWidget>

#include "engine_status.hpp"

class QLabel;
class QTableWidget;

namespace goblin::volunteer {

struct StatusView {
    QString state; // "computing", "waiting: on battery", …
    QString link;  // "connected to ws://…"
    EngineStatus engine;
    std::int64_t tasksToday = 0;
    std::int64_t tasksTotal = 0;
    QString idleSource;
    QString batterySource;
};

class StatusPage : public QWidget {
    Q_OBJECT
public:
    explicit StatusPage(QWidget* parent = nullptr);
    void display(const StatusView& view);

private:
    QLabel* m_state;
    QLabel* m_link;
    QTableWidget* m_devices;
    QLabel* m_probes;
};

} // namespace goblin::volunteer
