#include "tray_icon.hpp"

#include <QMenu>

#include "gui_resources.hpp"

namespace goblin::volunteer {

QIcon stateIcon(VolunteerState state) {
    initGuiResources();
    return QIcon(QStringLiteral(":/goblin/icons/goblin-%1.svg").arg(stateName(state)));
}

TrayIcon::TrayIcon(QObject* parent) : QObject(parent), m_menu(new QMenu) {
    m_pause = m_menu->addAction(QStringLiteral("Pause"));
    connect(m_pause, &QAction::triggered, this, &TrayIcon::pauseToggled);
    connect(m_menu->addAction(QStringLiteral("Pause for 1 hour")), &QAction::triggered, this,
            &TrayIcon::pauseHourRequested);
    connect(m_menu->addAction(QStringLiteral("Finish current task, then pause")),
            &QAction::triggered, this, &TrayIcon::finishThenPauseRequested);
    m_menu->addSeparator();
    connect(m_menu->addAction(QStringLiteral("Open window")), &QAction::triggered, this,
            &TrayIcon::openWindowRequested);
    connect(m_menu->addAction(QStringLiteral("Quit")), &QAction::triggered, this,
            &TrayIcon::quitRequested);
    m_icon.setContextMenu(m_menu);
    connect(&m_icon, &QSystemTrayIcon::activated, this,
            [this](QSystemTrayIcon::ActivationReason reason) {
                if (reason == QSystemTrayIcon::Trigger || reason == QSystemTrayIcon::DoubleClick)
                    Q_EMIT openWindowRequested();
            });
    showState(VolunteerState::Disconnected, QStringLiteral("GPU Goblin — starting"));
}

TrayIcon::~TrayIcon() {
    delete m_menu;
}

void TrayIcon::showState(VolunteerState state, const QString& tooltip) {
    m_icon.setIcon(stateIcon(state));
    m_icon.setToolTip(tooltip);
    m_pause->setText(pauseActionText(state));
}

} // namespace goblin::volunteer
