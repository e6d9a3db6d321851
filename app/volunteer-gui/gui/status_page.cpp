#include "status_page.hpp"

#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <array>

#include "volunteer_state.hpp"

namespace goblin::volunteer {
namespace {

enum Column { kNode, kDevice, kActivity, kTask, kDone, kVerdicts, kTime, kColumns };

QString duration(double seconds) {
    const auto total = static_cast<qint64>(seconds);
    if (total < 60)
        return QStringLiteral("%1 s").arg(seconds, 0, 'f', 1);
    if (total < 3600)
        return QStringLiteral("%1 min %2 s").arg(total / 60).arg(total % 60);
    return QStringLiteral("%1 h %2 min").arg(total / 3600).arg(total % 3600 / 60);
}

QString activityOf(const EngineStatus& engine) {
    if (engine.link != LinkState::Connected && !engine.running && engine.tasksOpen == 0)
        return linkText(engine);
    if (engine.running)
        return engine.parked ? QStringLiteral("paused mid-task") : QStringLiteral("computing");
    if (engine.tasksOpen > 0)
        return QStringLiteral("holding %1 task(s)").arg(engine.tasksOpen);
    return QStringLiteral("waiting for work");
}

void setText(QTableWidget* table, int row, int column, const QString& text) {
    auto* item = table->item(row, column);
    if (!item) {
        item = new QTableWidgetItem;
        item->setFlags(item->flags() & ~Qt::ItemIsEditable);
        table->setItem(row, column, item);
    }
    item->setText(text);
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
    m_link->setObjectName(QStringLiteral("link"));
    m_link->setWordWrap(true);
    m_totals = new QLabel;
    m_totals->setObjectName(QStringLiteral("totals"));
    m_devices = new QTableWidget(0, kColumns);
    m_devices->setObjectName(QStringLiteral("devices"));
    m_devices->setHorizontalHeaderLabels(
        {QStringLiteral("Lab node"), QStringLiteral("Computing on"), QStringLiteral("Activity"),
         QStringLiteral("Current task"), QStringLiteral("Done"),
         QStringLiteral("Accepted / rejected"), QStringLiteral("Time lent")});
    m_devices->verticalHeader()->hide();
    QHeaderView* header = m_devices->horizontalHeader();
    header->setSectionResizeMode(QHeaderView::Interactive); // fitColumns sets every width
    header->setStretchLastSection(false);
    m_devices->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_devices->setTextElideMode(Qt::ElideMiddle);
    m_devices->setWordWrap(false);
    for (int column : {kDone, kVerdicts, kTime})
        m_devices->horizontalHeaderItem(column)->setToolTip(
            QStringLiteral("Since the app started; the line above counts since the first start"));
    m_devices->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_probes = new QLabel;
    m_probes->setObjectName(QStringLiteral("probes"));
    m_probes->setWordWrap(true);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_state);
    layout->addWidget(m_link);
    layout->addWidget(m_totals);
    layout->addWidget(m_devices, 1);
    layout->addWidget(m_probes);
}

void StatusPage::display(const StatusView& view) {
    m_state->setText(view.state);
    m_link->setText(view.link);
    const TallyTotals& all = view.totals;
    m_totals->setText(QStringLiteral("Tasks today %1, in all %2 · accepted %3 / rejected %4 · "
                                     "compute time lent %5")
                          .arg(all.tasksToday)
                          .arg(all.tasksTotal)
                          .arg(all.acceptedTotal)
                          .arg(all.rejectedTotal)
                          .arg(duration(all.computeSecondsTotal)));
    const int rows = static_cast<int>(view.nodes.size());
    if (m_devices->rowCount() != rows) {
        m_devices->setRowCount(rows);
        for (int row = 0; row < rows; ++row)
            m_devices->setCellWidget(row, kTask, new QProgressBar);
    }
    for (int row = 0; row < rows; ++row) {
        const NodeStatus& node = view.nodes[static_cast<std::size_t>(row)];
        const EngineStatus& engine = node.engine;
        setText(m_devices, row, kNode,
                QStringLiteral("%1 (%2 %)").arg(node.url).arg(node.sharePercent));
        m_devices->item(row, kNode)->setToolTip(node.url);
        setText(m_devices, row, kDevice, backendLabel(engine.backend));
        setText(m_devices, row, kActivity, activityOf(engine));
        m_devices->item(row, kActivity)->setToolTip(activityOf(engine));
        setText(m_devices, row, kDone, QString::number(engine.counters.computed));
        setText(
            m_devices, row, kVerdicts,
            QStringLiteral("%1 / %2").arg(engine.counters.accepted).arg(engine.counters.rejected));
        setText(m_devices, row, kTime, duration(engine.counters.computeSeconds));
        auto* progress = static_cast<QProgressBar*>(m_devices->cellWidget(row, kTask));
        progress->setValue(engine.running ? qRound(engine.running->fraction * 100) : 0);
        progress->setFormat(engine.running
                                ? QStringLiteral("task %1: %p%").arg(engine.running->task)
                                : QStringLiteral("no task"));
    }
    m_probes->setText(
        QStringLiteral("Idle detection: %1\nBattery: %2").arg(view.idleSource, view.batterySource));
    fitColumns();
}

void StatusPage::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    fitColumns();
}

// Every column as wide as its contents when they fit, the spare width going to the lab node's
// address; otherwise the address and the activity give up their excess over kMinWide alike, in
// proportion, and elide (the whole text is their tooltip).
void StatusPage::fitColumns() {
    constexpr int kMinWide = 110;
    const int available = m_devices->viewport()->width();
    std::array<int, kColumns> widths{};
    int total = 0;
    for (int column = 0; column < kColumns; ++column) {
        m_devices->resizeColumnToContents(column);
        widths[column] = m_devices->columnWidth(column);
        total += widths[column];
    }
    if (total <= available) {
        widths[kNode] += available - total;
    } else {
        const int excessNode = std::max(0, widths[kNode] - kMinWide);
        const int excessActivity = std::max(0, widths[kActivity] - kMinWide);
        const int excess = excessNode + excessActivity;
        const int cut = std::min(excess, total - available);
        if (excess > 0) {
            const int nodeCut = cut * excessNode / excess;
            widths[kNode] -= nodeCut;
            widths[kActivity] -= cut - nodeCut;
        }
    }
    for (int column = 0; column < kColumns; ++column)
        m_devices->setColumnWidth(column, widths[column]);
}

} // namespace goblin::volunteer
