// The lab nodes page (GUI thread): the nodes this volunteer is attached to, each with its share of
// the lent compute time and its connection state; add a node by address (checked before it is
// used), remove one, change a share. Signals carry the edits; VolunteerApp applies them.
#pragma once

#include <QWidget>

#include <vector>

#include "node_shares.hpp"

class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;

namespace goblin::volunteer {

class NodesPage : public QWidget {
    Q_OBJECT
public:
    explicit NodesPage(QWidget* parent = nullptr);
    // Rebuilds the rows for a new list of nodes.
    void setNodes(const std::vector<AttachedNode>& nodes);
    // Updates the share and connection columns from the engines' statuses.
    void showStatus(const std::vector<NodeStatus>& nodes);
    void setMessage(const QString& message);
    // The CA file shown in its field (wss:// nodes).
    void setCaFile(const QString& file);
    QString connectionText(const QString& url) const;

Q_SIGNALS:
    void nodeAdded(const QString& url);
    void nodeRemoved(const QString& url);
    void shareChanged(const QString& url, int share);
    // The volunteer finished editing the CA file field and it differs from what was set.
    void caFileChanged(const QString& file);

private:
    void tryAdd();
    int rowOf(const QString& url) const;

    std::vector<AttachedNode> m_nodes;
    QLineEdit* m_url;
    QLineEdit* m_caFile;
    QString m_shownCaFile;
    QPushButton* m_remove;
    QTableWidget* m_table;
    QLabel* m_message;
};

} // namespace goblin::volunteer
