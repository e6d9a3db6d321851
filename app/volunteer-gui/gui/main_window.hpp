// The main window (GUI thread): status, lab nodes, settings and event log pages in tabs. Closing
// it only hides it; the app keeps computing in the tray.
#pragma once

#include <QMainWindow>

class QPlainTextEdit;
class QTabWidget;

namespace goblin::volunteer {

class NodesPage;
class SettingsPage;
class StatusPage;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(int hardwareThreads, QWidget* parent = nullptr);
    StatusPage* statusPage() const { return m_status; }
    NodesPage* nodesPage() const { return m_nodes; }
    SettingsPage* settingsPage() const { return m_settings; }
    QTabWidget* tabs() const { return m_tabs; }
    void appendLog(const QString& line);

private:
    QTabWidget* m_tabs;
    StatusPage* m_status;
    NodesPage* m_nodes;
    SettingsPage* m_settings;
    QPlainTextEdit* m_log;
};

} // namespace goblin::volunteer
