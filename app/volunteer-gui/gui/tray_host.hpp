// Whether a tray host is there to show the tray icon (GUI thread; owned by VolunteerApp). Without
// one the window is the only way in: it is shown and closing it quits. The host is checked every
// 5 s; a host can go away (a panel restarts or is removed) and come back, and the icon with it.
#pragma once

#include <QObject>
#include <QTimer>

#include <functional>

#include "tray_icon.hpp"

class QWidget;

namespace goblin::volunteer {

class TrayHost : public QObject {
    Q_OBJECT
public:
    // available: whether a tray host exists; empty: QSystemTrayIcon::isSystemTrayAvailable.
    TrayHost(std::function<bool()> available, QWidget& window, QObject* parent = nullptr);
    // The icon, shown or not; its signals are the tray menu's commands.
    TrayIcon& icon() { return m_icon; }
    // The icon while a host shows it, else null.
    TrayIcon* shownIcon() { return m_lost ? nullptr : &m_icon; }
    // Shows the icon (and the window, unless minimized) or, with no host, the window; then
    // watches the host.
    void start(bool minimized);
    // Checks the host again (the watch's timer runs it every 5 s).
    void check();

Q_SIGNALS:
    void logLine(const QString& line);
    void hostReturned(); // the icon is shown again: it should show the current state

private:
    std::function<bool()> m_available;
    QWidget& m_window;
    TrayIcon m_icon;
    QTimer m_watch;
    bool m_lost = false;
};

} // namespace goblin::volunteer
