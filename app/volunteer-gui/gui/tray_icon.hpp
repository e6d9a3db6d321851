// The tray icon (GUI thread): one goblin per state, a tooltip with the detail, and the menu —
// pause/resume, pause for 1 hour, finish the current task then pause, open the window, quit.
#pragma once

#include <QObject>
#include <QSystemTrayIcon>

#include "volunteer_state.hpp"

class QAction;
class QMenu;

namespace goblin::volunteer {

QIcon stateIcon(VolunteerState state);

class TrayIcon : public QObject {
    Q_OBJECT
public:
    explicit TrayIcon(QObject* parent = nullptr);
    ~TrayIcon() override;
    void showState(VolunteerState state, const QString& tooltip);
    QSystemTrayIcon& icon() { return m_icon; }

Q_SIGNALS:
    void pauseToggled();
    void pauseHourRequested();
    void finishThenPauseRequested();
    void openWindowRequested();
    void quitRequested();

private:
    QSystemTrayIcon m_icon;
    QMenu* m_menu;
    QAction* m_pause;
};

} // namespace goblin::volunteer
