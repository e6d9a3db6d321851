// The main window (GUI thread): status, lab nodes, settings and event log pages in tabs — or, on
// the first run, the first-run page in their place — and a Pause/Resume button beside the tabs
// that acts like the tray's. Closing it only hides it; the app keeps computing in the tray.
#pragma once

#include <QMainWindow>

#include "volunteer_state.hpp"

class QPlainTextEdit;
class QPushButton;
class QStackedWidget;
class QTabWidget;

namespace goblin::volunteer {

class FirstRunPage;
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
    FirstRunPage* firstRunPage() const { return m_firstRun; }
    QTabWidget* tabs() const { return m_tabs; }
    void appendLog(const QString& line);
    // The first-run page in place of the tabs, and back.
    void showFirstRun();
    void showTabs();
    bool showingFirstRun() const;
    // The button reads Resume while the volunteer's pause holds, Pause otherwise (as the tray).
    void showState(VolunteerState state);
    QPushButton* pauseButton() const { return m_pause; }

Q_SIGNALS:
    void pauseToggled();

private:
    QStackedWidget* m_pages;
    QTabWidget* m_tabs;
    StatusPage* m_status;
    NodesPage* m_nodes;
    SettingsPage* m_settings;
    FirstRunPage* m_firstRun;
    QPlainTextEdit* m_log;
    QPushButton* m_pause;
};

} // namespace goblin::volunteer
