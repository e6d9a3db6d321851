// The settings page (GUI thread): CPU cores and time limit, idle rule, battery, weekly schedule,
// memory and network caps, start at login, and per OpenCL device on/off with a GPU-time limit.
// Every edit is applied live: settingsEdited carries the whole new settings.
#pragma once

#include <QWidget>

#include <vector>

#include "settings_store.hpp"

class QCheckBox;
class QLabel;
class QLineEdit;
class QSlider;
class QSpinBox;

namespace goblin::volunteer {

// An OpenCL device the window offers ("gpu0", its name and type), from listOpenClDevices().
struct GpuDevice {
    QString id;
    QString description;
};

class SettingsPage : public QWidget {
    Q_OBJECT
public:
    explicit SettingsPage(int hardwareThreads, QWidget* parent = nullptr);
    // Builds one row per device (call before setSettings); none: "CPU only" with the reason.
    void setGpuDevices(const std::vector<GpuDevice>& devices, const QString& whyNone = {});
    void setSettings(const VolunteerSettings& settings);
    VolunteerSettings settings() const { return m_settings; }

Q_SIGNALS:
    void settingsEdited(const goblin::volunteer::VolunteerSettings& settings);

private:
    struct GpuRow {
        QString id;
        QCheckBox* enabled;
        QSpinBox* limit;
    };
    void collect();
    QList<QWidget*> editors() const;

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
    QWidget* m_gpuBox;
    std::vector<GpuRow> m_gpus;
};

} // namespace goblin::volunteer
