// The lab nodes page (GUI thread): the node this volunteer is attached to, its connection state,
// and add/remove. One node for now: adding a node replaces the current one.
#pragma once

#include <QWidget>

class QLabel;
class QLineEdit;
class QTableWidget;

namespace goblin::volunteer {

class NodesPage : public QWidget {
    Q_OBJECT
public:
    explicit NodesPage(QWidget* parent = nullptr);
    void setNode(const QString& url, const QString& state);
    void setMessage(const QString& message);

Q_SIGNALS:
    void nodeAdded(const QString& url);
    void nodeRemoved();

private:
    QLineEdit* m_url;
    QTableWidget* m_nodes;
    QLabel* m_message;
};

} // namespace goblin::volunteer
