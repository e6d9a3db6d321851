#include "nodes_page.hpp"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace goblin::volunteer {

NodesPage::NodesPage(QWidget* parent) : QWidget(parent) {
    m_url = new QLineEdit;
    m_url->setObjectName(QStringLiteral("nodeUrl"));
    m_url->setPlaceholderText(QStringLiteral("ws://lab.example.org:8765"));
    auto* add = new QPushButton(QStringLiteral("Attach"));
    add->setObjectName(QStringLiteral("attachNode"));
    auto* remove = new QPushButton(QStringLiteral("Detach"));
    remove->setObjectName(QStringLiteral("detachNode"));
    m_nodes = new QTableWidget(0, 2);
    m_nodes->setHorizontalHeaderLabels({QStringLiteral("Lab node"), QStringLiteral("Connection")});
    m_nodes->horizontalHeader()->setStretchLastSection(true);
    m_nodes->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_nodes->verticalHeader()->hide();
    m_nodes->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_message = new QLabel;
    m_message->setWordWrap(true);
    auto* row = new QHBoxLayout;
    row->addWidget(m_url, 1);
    row->addWidget(add);
    row->addWidget(remove);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(row);
    layout->addWidget(m_nodes, 1);
    layout->addWidget(m_message);
    layout->addWidget(new QLabel(
        QStringLiteral("One lab node at a time for now: attaching another replaces it.")));
    connect(add, &QPushButton::clicked, this, [this] {
        const QString url = m_url->text().trimmed();
        if (!url.isEmpty())
            Q_EMIT nodeAdded(url);
    });
    connect(m_url, &QLineEdit::returnPressed, add, &QPushButton::click);
    connect(remove, &QPushButton::clicked, this, &NodesPage::nodeRemoved);
}

void NodesPage::setNode(const QString& url, const QString& state) {
    m_nodes->setRowCount(url.isEmpty() ? 0 : 1);
    if (url.isEmpty())
        return;
    m_nodes->setItem(0, 0, new QTableWidgetItem(url));
    m_nodes->setItem(0, 1, new QTableWidgetItem(state));
}

void NodesPage::setMessage(const QString& message) {
    m_message->setText(message);
}

} // namespace goblin::volunteer
