#include "nodes_page.hpp"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include "volunteer_state.hpp"

namespace goblin::volunteer {
namespace {

enum Column { kUrl, kShare, kSharePercent, kConnection, kColumns };

QTableWidgetItem* cell(const QString& text) {
    auto* item = new QTableWidgetItem(text);
    item->setFlags(item->flags() & ~Qt::ItemIsEditable);
    return item;
}

} // namespace

NodesPage::NodesPage(QWidget* parent) : QWidget(parent) {
    m_url = new QLineEdit;
    m_url->setObjectName(QStringLiteral("nodeUrl"));
    m_url->setPlaceholderText(QStringLiteral("wss://lab.example.org:8765"));
    m_caFile = new QLineEdit;
    m_caFile->setObjectName(QStringLiteral("caFile"));
    m_caFile->setPlaceholderText(QStringLiteral("empty: the system's trusted certificates"));
    m_caFile->setToolTip(QStringLiteral("A PEM file with the CA certificate your lab gave you: "
                                        "wss:// lab nodes must show a certificate it signed."));
    auto* add = new QPushButton(QStringLiteral("Add lab node"));
    add->setObjectName(QStringLiteral("addNode"));
    m_remove = new QPushButton(QStringLiteral("Remove selected"));
    m_remove->setObjectName(QStringLiteral("removeNode"));
    m_remove->setEnabled(false);
    m_table = new QTableWidget(0, kColumns);
    m_table->setObjectName(QStringLiteral("nodes"));
    m_table->setHorizontalHeaderLabels({QStringLiteral("Lab node"), QStringLiteral("Share"),
                                        QStringLiteral("Of the time lent"),
                                        QStringLiteral("Connection")});
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->verticalHeader()->hide();
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setWordWrap(true);
    m_message = new QLabel;
    m_message->setObjectName(QStringLiteral("nodeMessage"));
    m_message->setWordWrap(true);
    m_message->setStyleSheet(QStringLiteral("color: #b00020"));
    auto* help =
        new QLabel(QStringLiteral("Shares split the computer time you lend between the lab nodes: "
                                  "a node with share 3 gets "
                                  "three times the time of a node with share 1. Up to %1 nodes.")
                       .arg(kMaxNodes));
    help->setWordWrap(true);
    auto* row = new QHBoxLayout;
    row->addWidget(m_url, 1);
    row->addWidget(add);
    row->addWidget(m_remove);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(row);
    layout->addWidget(m_message);
    layout->addWidget(m_table, 1);
    auto* tls = new QFormLayout;
    tls->addRow(QStringLiteral("CA file for wss:// nodes:"), m_caFile);
    layout->addLayout(tls);
    layout->addWidget(help);
    setMessage({});
    connect(add, &QPushButton::clicked, this, &NodesPage::tryAdd);
    connect(m_url, &QLineEdit::returnPressed, this, &NodesPage::tryAdd);
    connect(m_caFile, &QLineEdit::editingFinished, this, [this] {
        const QString file = m_caFile->text().trimmed();
        if (file == m_shownCaFile)
            return;
        m_shownCaFile = file;
        Q_EMIT caFileChanged(file);
    });
    connect(m_table, &QTableWidget::itemSelectionChanged, this,
            [this] { m_remove->setEnabled(!m_table->selectedItems().isEmpty()); });
    connect(m_remove, &QPushButton::clicked, this, [this] {
        const int selected = m_table->currentRow();
        if (selected >= 0 && selected < static_cast<int>(m_nodes.size()))
            Q_EMIT nodeRemoved(m_nodes[static_cast<std::size_t>(selected)].url);
    });
}

void NodesPage::tryAdd() {
    const QString url = m_url->text().trimmed();
    if (const auto problem = nodeUrlProblem(url))
        return setMessage(*problem);
    if (rowOf(url) >= 0)
        return setMessage(QStringLiteral("%1 is already in the list.").arg(url));
    if (m_nodes.size() >= static_cast<std::size_t>(kMaxNodes))
        return setMessage(QStringLiteral("At most %1 lab nodes: remove one before adding another.")
                              .arg(kMaxNodes));
    setMessage({});
    m_url->clear();
    Q_EMIT nodeAdded(url);
}

int NodesPage::rowOf(const QString& url) const {
    for (std::size_t i = 0; i < m_nodes.size(); ++i)
        if (m_nodes[i].url == url)
            return static_cast<int>(i);
    return -1;
}

void NodesPage::setNodes(const std::vector<AttachedNode>& nodes) {
    m_nodes = nodes;
    m_table->clearContents();
    m_table->setRowCount(static_cast<int>(nodes.size()));
    const std::vector<int> percents = sharePercents(nodes);
    for (int row = 0; row < static_cast<int>(nodes.size()); ++row) {
        const AttachedNode& node = nodes[static_cast<std::size_t>(row)];
        m_table->setItem(row, kUrl, cell(node.url));
        auto* share = new QSpinBox;
        share->setObjectName(QStringLiteral("share_%1").arg(row));
        share->setRange(1, kMaxShare);
        share->setValue(node.share);
        connect(share, &QSpinBox::valueChanged, this,
                [this, url = node.url](int value) { Q_EMIT shareChanged(url, value); });
        m_table->setCellWidget(row, kShare, share);
        m_table->setItem(row, kSharePercent,
                         cell(QStringLiteral("%1 %").arg(percents[static_cast<std::size_t>(row)])));
        m_table->setItem(row, kConnection, cell(QStringLiteral("not started")));
    }
    m_remove->setEnabled(false);
    m_table->resizeRowsToContents();
}

void NodesPage::showStatus(const std::vector<NodeStatus>& nodes) {
    for (const NodeStatus& node : nodes) {
        const int row = rowOf(node.url);
        if (row < 0)
            continue;
        m_table->item(row, kSharePercent)->setText(QStringLiteral("%1 %").arg(node.sharePercent));
        const QString text = nodeLinkText(node.engine);
        QTableWidgetItem* connection = m_table->item(row, kConnection);
        if (connection->text() == text)
            continue;
        connection->setText(text);
        connection->setToolTip(text);
        const bool bad =
            node.engine.link == LinkState::Refused || node.engine.link == LinkState::Disconnected;
        connection->setForeground(bad ? QColor(0xb0, 0x00, 0x20) : palette().text().color());
        m_table->resizeRowToContents(row);
    }
}

QString NodesPage::connectionText(const QString& url) const {
    const int row = rowOf(url);
    return row < 0 ? QString() : m_table->item(row, kConnection)->text();
}

void NodesPage::setCaFile(const QString& file) {
    m_shownCaFile = file.trimmed();
    m_caFile->setText(m_shownCaFile);
}

void NodesPage::setMessage(const QString& message) {
    m_message->setText(message);
    m_message->setVisible(!message.isEmpty());
}

} // namespace goblin::volunteer
