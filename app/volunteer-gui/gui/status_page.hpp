// The status page (GUI thread): the overall state and the totals (tasks today/total, accepted vs
// rejected, compute time lent), then one row per lab node with the device it computes on, its
// activity, the current task's progress and its own tallies; and which host probes work (e.g.
// "idle detection unavailable").
#pragma once

#include <QWidget>

#include <vector>

#include "engine_status.hpp"
#include "node_shares.hpp"

class QLabel;
class QTableWidget;

namespace goblin::volunteer {

struct StatusView {
    QString state;       // "computing", "waiting: on battery", …
    QString link;        // "2 lab nodes, 1 connected"
    EngineStatus engine; // all nodes summed
    std::vector<NodeStatus> nodes;
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
    QLabel* m_totals;
    QTableWidget* m_devices;
    QLabel* m_probes;
};

} // namespace goblin::volunteer
