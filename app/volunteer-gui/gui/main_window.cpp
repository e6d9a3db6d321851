#include "main_window.hpp"

#include <QDateTime>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QStackedWidget>
#include <QTabWidget>

#include "first_run_page.hpp"
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
    m_firstRun = new FirstRunPage(hardwareThreads);
    m_firstRun->setObjectName(QStringLiteral("firstRun"));
    m_log = new QPlainTextEdit;
    m_log->setObjectName(QStringLiteral("eventLog"));
    m_log->setReadOnly(true);
    m_log->setMaximumBlockCount(2000);
    m_tabs->addTab(m_status, QStringLiteral("Status"));
    m_tabs->addTab(m_nodes, QStringLiteral("Lab nodes"));
    m_tabs->addTab(m_settings, QStringLiteral("Settings"));
    m_tabs->addTab(m_log, QStringLiteral("Event log"));
    m_pause = new QPushButton(pauseActionText(VolunteerState::Disconnected));
    m_pause->setObjectName(QStringLiteral("pauseButton"));
    m_pause->setToolTip(QStringLiteral("Pause or resume lending this computer (as in the tray)"));
    m_tabs->setCornerWidget(m_pause, Qt::TopRightCorner);
    connect(m_pause, &QPushButton::clicked, this, &MainWindow::pauseToggled);
    m_pages = new QStackedWidget;
    m_pages->addWidget(m_tabs);
    m_pages->addWidget(m_firstRun);
    setCentralWidget(m_pages);
    resize(760, 520);
}

void MainWindow::appendLog(const QString& line) {
    m_log->appendPlainText(
        QDateTime::currentDateTime().toString(QStringLiteral("yyyy-MM-dd HH:mm:ss  ")) + line);
}

void MainWindow::showFirstRun() {
    m_pages->setCurrentWidget(m_firstRun);
}

void MainWindow::showTabs() {
    m_pages->setCurrentWidget(m_tabs);
}

void MainWindow::showState(VolunteerState state) {
    m_pause->setText(pauseActionText(state));
}

bool MainWindow::showingFirstRun() const {
    return m_pages->currentWidget() == m_firstRun;
}

} // namespace goblin::volunteer
