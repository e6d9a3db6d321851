#include "status_page.hpp"

#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QTableWidget>
#include <QVBoxLayout>

namespace goblin::volunteer {
namespace {

QString duration(double seconds) {
    const auto total = static_cast<qint64>(seconds);
    if (total < 60)
        return QStringLiteral("%1 s").arg(seconds, 0, 'f', 1);
    if (total < 3600)
        return QStringLiteral("%1 min %2 s").arg(total / 60).arg(total % 60);
    return QStringLiteral("%1 h %2 min").arg(total / 3600).arg(total % 3600 / 60);
}

} // namespace

StatusPage::StatusPage(QWidget* parent) : QWidget(parent) {
    m_state = new QLabel;
    m_state->setObjectName(QStringLiteral("state"));
    QFont big = m_state->font();
    big.setPointSizeF(big.pointSizeF() * 1.4);
    big.setBold(true);
    m_state->setFont(big);
    m_link = new QLabel;
    m_link->setWordWrap(true);
    m_devices = new QTableWidget(1, 6);
    m_devices->setObjectName(QStringLiteral("devices"));
    m_devices->setHorizontalHeaderLabels(
        {QStringLiteral("Device"), QStringLiteral("Activity"), QStringLiteral("Current task"),
         QStringLiteral("Tasks today / total"), QStringLiteral("Accepted / rejected"),
         QStringLiteral("Compute time lent")});
    m_devices->verticalHeader()->hide();
    m_devices->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_devices->horizontalHeader()->setStretchLastSection(true);
    m_devices->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_devices->setCellWidget(0, 2, new QProgressBar);
    m_probes = new QLabel;
    m_probes->setWordWrap(true);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_state);
    layout->addWidget(m_link);
    layout->addWidget(m_devices, 1);
    layout->addWidget(m_probes);
}

void StatusPage::display(const StatusView& view) {
    m_state->setText(view.state);
    m_link->setText(view.link);
    const EngineStatus& engine = view.engine;
    const EngineCounters& c = engine.counters;
    QString activity = QStringLiteral("idle");
    if (engine.running)
        activity = engine.parked ? QStringLiteral("paused mid-task") : QStringLiteral("computing");
    else if (engine.tasksOpen > 0)
        activity = QStringLiteral("holding %1 task(s)").arg(engine.tasksOpen);
    const QStringList cells{QStringLiteral("CPU (%1)").arg(QString::fromStdString(engine.backend)),
                            activity,
                            QString(),
                            QStringLiteral("%1 / %2").arg(view.tasksToday).arg(view.tasksTotal),
                            QStringLiteral("%1 / %2").arg(c.accepted).arg(c.rejected),
                            duration(c.computeSeconds)};
    for (int column = 0; column < cells.size(); ++column) {
        if (column == 2)
            continue;
        auto* item = m_devices->item(0, column);
        if (!item) {
            item = new QTableWidgetItem;
            m_devices->setItem(0, column, item);
        }
        item->setText(cells[column]);
    }
    auto* progress = static_cast<QProgressBar*>(m_devices->cellWidget(0, 2));
    progress->setValue(engine.running ? qRound(engine.running->fraction * 100) : 0);
    progress->setFormat(engine.running ? QStringLiteral("task %1: %p%").arg(engine.running->task)
                                       : QStringLiteral("no task"));
    m_probes->setText(
        QStringLiteral("Idle detection: %1\nBattery: %2").arg(view.idleSource, view.batterySource));
}

} // namespace goblin::volunteer
