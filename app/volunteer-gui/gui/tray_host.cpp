#include "tray_host.hpp"

#include <QApplication>
#include <QSystemTrayIcon>
#include <QWidget>

namespace goblin::volunteer {

TrayHost::TrayHost(std::function<bool()> available, QWidget& window, QObject* parent)
    : QObject(parent), m_available(std::move(available)), m_window(window) {
    if (!m_available)
        m_available = [] { return QSystemTrayIcon::isSystemTrayAvailable(); };
}

void TrayHost::start(bool minimized) {
    m_lost = !m_available();
    QApplication::setQuitOnLastWindowClosed(m_lost);
    if (m_lost) {
        Q_EMIT logLine(QStringLiteral(
            "no system tray is available: the window stays open, and closing it quits"));
        m_window.show();
    } else {
        m_icon.icon().show();
        if (!minimized)
            m_window.show();
    }
    m_watch.setInterval(5000);
    connect(&m_watch, &QTimer::timeout, this, &TrayHost::check);
    m_watch.start();
}

void TrayHost::check() {
    const bool available = m_available();
    if (available == !m_lost)
        return;
    m_lost = !available;
    QApplication::setQuitOnLastWindowClosed(m_lost);
    if (m_lost) {
        Q_EMIT logLine(
            QStringLiteral("the system tray went away: showing the window (closing it quits)"));
        m_window.showNormal();
        return;
    }
    Q_EMIT logLine(QStringLiteral("the system tray is back"));
    m_icon.icon().show();
    Q_EMIT hostReturned();
}

} // namespace goblin::volunteer
