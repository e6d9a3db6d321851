// Loads and saves the volunteer's settings with QSettings (GUI thread). Values out of range or of
// the wrong type are clamped to the nearest valid value (or the default) and reported, never
// trusted; the schedule is kept as text ("Mon-Fri 09:00-17:00; Sat 22:00-06:00"). Lab nodes
// ("nodes/<i>/url", "nodes/<i>/share") and GPUs ("gpus/<i>/device", …) are QSettings arrays; a
// node address that does not parse, or a repeated one, is dropped and reported.
#pragma once

#include <QSettings>
#include <QString>
#include <QStringList>

#include <optional>
#include <vector>

#include "node_shares.hpp"
#include "throttle_settings.hpp"

namespace goblin::volunteer {

enum class ScheduleUse { Off, On };

struct VolunteerSettings {
    ThrottleSettings throttle;
    QString scheduleText;            // the schedule as the user wrote it
    std::vector<AttachedNode> nodes; // the lab nodes and their shares, in the order added
    QString caFile; // PEM CA file wss:// nodes' certificates must chain to (empty: system store)
    bool startAtLogin = false;
};

struct LoadedSettings {
    VolunteerSettings settings;
    QStringList warnings; // one line per value that had to be corrected
};

LoadedSettings loadSettings(QSettings& store);
// No setting saved yet: the app starts on its first-run page (first_run_page.hpp).
bool isFirstRun(const QSettings& store);
void saveSettings(QSettings& store, const VolunteerSettings& settings);

// "Mon 22:00-06:00; Tue-Fri 09:00-17:00" ↔ ranges. Day names are English three-letter names;
// a day span expands to one range per day. Empty when the text is malformed (with the reason).
std::optional<std::vector<ScheduleRange>> parseSchedule(const QString& text,
                                                        QString* error = nullptr);

// The schedule as the form and the loader accept it: readable, and, when switched on, naming at
// least one span of hours (an empty one would mean "never", which is not what anyone asks for).
// Empty with the reason otherwise.
std::optional<std::vector<ScheduleRange>> usableSchedule(const QString& text, ScheduleUse use,
                                                         QString* error);

// Writes or removes ~/.config/autostart/goblin-volunteer.desktop (XDG autostart).
bool applyStartAtLogin(bool enabled, QString* error = nullptr);

} // namespace goblin::volunteer
