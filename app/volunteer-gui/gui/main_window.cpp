#include "main_window.hpp"

#include <QDateTime>
#include <QPlainTextEdit>
#include <QTabWidget>

#include "nodes_page.hpp"
#include "settings_page.hpp"
#include "status_page.hpp"

namespace goblin::volunteer {

MainWindow::MainWindow(int hardwareThreads, QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("GPU Goblin Volunteer"));
    m_tabs = new QTabWidget;
    m_status = new StatusPage;
    m_nodes = new NodesPage;
    m_settings = new SettingsPage(hardwareThreads);
    m_log = new QPlainTextEdit;
    m_log->setObjectName(QStringLiteral("eventLog"));
    m_log->setReadOnly(true);
    m_log->setMaximumBlockCount(2000);
    m_tabs->addTab(m_status, QStringLiteral("Status"));
    m_tabs->addTab(m_nodes, QStringLiteral("Lab nodes"));
    m_tabs->addTab(m_settings, QStringLiteral("Settings"));
    m_tabs->addTab(m_log, QStringLiteral("Event log"));
    setCentralWidget(m_tabs);
    resize(760, 520);
}

void MainWindow::appendLog(const QString& line) {
    m_log->appendPlainText(
        QDateTime::currentDateTime().toString(QStringLiteral("yyyy-MM-dd HH:mm:ss  ")) + line);
}

} // namespace goblin::volunteer
