// The settings page (GUI thread): CPU cores and time limit, idle rule, battery, weekly schedule,
// memory and network caps, start at login. Every edit is applied live: settingsEdited carries the
// whole new settings. GPUs get their rows when the engine lists OpenCL devices (CPU-only today).
#pragma once

#include <QWidget>

#include "settings_store.hpp"

class QCheckBox;
class QLabel;
class QLineEdit;
class QSlider;
class QSpinBox;

namespace goblin::volunteer {

class SettingsPage : public QWidget {
    Q_OBJECT
public:
    explicit SettingsPage(int hardwareThreads, QWidget* parent = nullptr);
    void setSettings(const VolunteerSettings& settings);
    VolunteerSettings settings() const { return m_settings; }

Q_SIGNALS:
    void settingsEdited(const goblin::volunteer::VolunteerSettings& settings);

private:
    void collect();

    VolunteerSettings m_settings;
    QSpinBox* m_cores;
    QSlider* m_cpuLimit;
    QLabel* m_cpuLimitLabel;
    QSpinBox* m_idleMinutes;
    QSpinBox* m_grace;
    QCheckBox* m_pauseOnBattery;
    QSpinBox* m_minBattery;
    QCheckBox* m_scheduleEnabled;
    QLineEdit* m_schedule;
    QLabel* m_scheduleError;
    QSpinBox* m_memoryCap;
    QSpinBox* m_memoryPause;
    QSpinBox* m_networkCap;
    QCheckBox* m_startAtLogin;
};

} // namespace goblin::volunteer
