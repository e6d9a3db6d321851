// Loads and saves the volunteer's settings with QSettings (GUI thread). Values out of range or of
// the wrong type are clamped to the nearest valid value (or the default) and reported, never
// trusted; the schedule is kept as text ("Mon-Fri 09:00-17:00; Sat 22:00-06:00").
#pragma once

#include <QSettings>
#include <QString>
#include <QStringList>

#include <optional>
#include <vector>

#include "throttle_settings.hpp"

namespace goblin::volunteer {

struct VolunteerSettings {
    ThrottleSettings throttle;
    QString scheduleText; // the schedule as the user wrote it
    QString nodeUrl;      // one lab node for now
    bool startAtLogin = false;
};

struct LoadedSettings {
    VolunteerSettings settings;
    QStringList warnings; // one line per value that had to be corrected
};

LoadedSettings loadSettings(QSettings& store);
void saveSettings(QSettings& store, const VolunteerSettings& settings);

// "Mon 22:00-06:00; Tue-Fri 09:00-17:00" ↔ ranges. Day names are English three-letter names;
// a day span expands to one range per day. Empty when the text is malformed (with the reason).
std::optional<std::vector<ScheduleRange>> parseSchedule(const QString& text,
                                                        QString* error = nullptr);

// Writes or removes ~/.config/autostart/goblin-volunteer.desktop (XDG autostart).
bool applyStartAtLogin(bool enabled, QString* error = nullptr);

} // namespace goblin::volunteer
