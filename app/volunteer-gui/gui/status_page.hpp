// The status page (GUI thread): the overall state and the totals (tasks today/total, accepted vs
// rejected, compute time lent, all from the kept tallies), then one row per lab node with the
// device it computes on, its activity, the current task's progress and its tallies since the app
// started; and which host probes work (e.g. "idle detection unavailable"). The table fits its
// page: the lab node and activity columns share the width left and elide.
#pragma once

#include <QWidget>

#include <vector>

#include "daily_tally.hpp"
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
    TallyTotals totals; // the status line's counts, kept across restarts (DailyTally)
    QString idleSource;
    QString batterySource;
};

class StatusPage : public QWidget {
    Q_OBJECT
public:
    explicit StatusPage(QWidget* parent = nullptr);
    void display(const StatusView& view);

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void fitColumns();

    QLabel* m_state;
    QLabel* m_link;
    QLabel* m_totals;
    QTableWidget* m_devices;
    QLabel* m_probes;
};

} // namespace goblin::volunteer
