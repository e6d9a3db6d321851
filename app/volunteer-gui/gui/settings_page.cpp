#include "settings_page.hpp"

#include "volunteer_state.hpp"

#include <QCheckBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>

namespace goblin::volunteer {
namespace {

QSpinBox* spinBox(const QString& name, int low, int high, const QString& suffix,
                  const QString& special = {}) {
    auto* box = new QSpinBox;
    box->setObjectName(name);
    box->setRange(low, high);
    box->setSuffix(suffix);
    if (!special.isEmpty())
        box->setSpecialValueText(special);
    return box;
}

} // namespace

SettingsPage::SettingsPage(int hardwareThreads, QWidget* parent) : QWidget(parent) {
    m_cores = spinBox(QStringLiteral("cpuCores"), 0, hardwareThreads, QStringLiteral(" cores"),
                      hardwareThreads == 1 ? QStringLiteral("the one core")
                                           : QStringLiteral("all %1 cores").arg(hardwareThreads));
    connect(m_cores, &QSpinBox::valueChanged, m_cores,
            [box = m_cores](int cores) { box->setSuffix(QLatin1Char(' ') + coresWord(cores)); });
    m_cpuLimit = new QSlider(Qt::Horizontal);
    m_cpuLimit->setObjectName(QStringLiteral("cpuLimit"));
    m_cpuLimit->setRange(1, 100);
    m_cpuLimit->setSingleStep(5);
    m_cpuLimit->setPageStep(25);
    m_cpuLimitLabel = new QLabel;
    auto* cpuLimitRow = new QHBoxLayout;
    cpuLimitRow->addWidget(m_cpuLimit);
    cpuLimitRow->addWidget(m_cpuLimitLabel);
    m_idleMinutes = spinBox(QStringLiteral("idleMinutes"), 0, 240, QStringLiteral(" min"),
                            QStringLiteral("always (also while I use the computer)"));
    m_grace = spinBox(QStringLiteral("idleGrace"), 0, 600, QStringLiteral(" s"));
    m_pauseOnBattery = new QCheckBox(QStringLiteral("Pause while on battery"));
    m_pauseOnBattery->setObjectName(QStringLiteral("pauseOnBattery"));
    m_minBattery = spinBox(QStringLiteral("minBattery"), 0, 100, QStringLiteral(" %"),
                           QStringLiteral("never"));
    m_scheduleEnabled = new QCheckBox(QStringLiteral("Only during these hours:"));
    m_scheduleEnabled->setObjectName(QStringLiteral("scheduleEnabled"));
    m_schedule = new QLineEdit;
    m_schedule->setObjectName(QStringLiteral("schedule"));
    m_schedule->setPlaceholderText(QStringLiteral("Mon-Fri 18:00-08:00; Sat-Sun 00:00-24:00"));
    m_scheduleError = new QLabel;
    m_scheduleError->setObjectName(QStringLiteral("scheduleError"));
    m_scheduleError->setWordWrap(true);
    m_scheduleError->setStyleSheet(QStringLiteral("color: #b00020"));
    m_memoryCap = spinBox(QStringLiteral("memoryCap"), 0, 1 << 20, QStringLiteral(" MiB"),
                          QStringLiteral("half of the free memory"));
    m_memoryCap->setSingleStep(256);
    m_memoryPause = spinBox(QStringLiteral("memoryPause"), 0, 100, QStringLiteral(" %"),
                            QStringLiteral("never"));
    m_networkCap = spinBox(QStringLiteral("networkCap"), 0, 1 << 24, QStringLiteral(" MiB per day"),
                           QStringLiteral("no limit"));
    m_networkCap->setSingleStep(100);
    m_startAtLogin = new QCheckBox(QStringLiteral("Start when I log in"));
    m_startAtLogin->setObjectName(QStringLiteral("startAtLogin"));

    auto* form = new QFormLayout(this);
    form->addRow(QStringLiteral("CPU cores to lend"), m_cores);
    form->addRow(QStringLiteral("CPU time on those cores"), cpuLimitRow);
    form->addRow(QStringLiteral("Compute after I am idle for"), m_idleMinutes);
    form->addRow(QStringLiteral("Keep going while I touch the computer for"), m_grace);
    form->addRow(QString(), m_pauseOnBattery);
    form->addRow(QStringLiteral("Pause below battery charge"), m_minBattery);
    // The error line takes room only while there is an error.
    auto* scheduleField = new QVBoxLayout;
    scheduleField->addWidget(m_schedule);
    scheduleField->addWidget(m_scheduleError);
    m_scheduleError->hide();
    form->addRow(m_scheduleEnabled, scheduleField);
    form->addRow(QStringLiteral("Memory to lend"), m_memoryCap);
    form->addRow(QStringLiteral("Pause when the computer uses more memory than"), m_memoryPause);
    form->addRow(QStringLiteral("Network use"), m_networkCap);
    m_gpuBox = new QWidget;
    m_gpuBox->setObjectName(QStringLiteral("gpus"));
    new QVBoxLayout(m_gpuBox);
    m_gpuBox->layout()->setContentsMargins(0, 0, 0, 0);
    form->addRow(QStringLiteral("GPUs (OpenCL)"), m_gpuBox);
    form->addRow(QString(), m_startAtLogin);

    for (QSpinBox* box :
         {m_cores, m_idleMinutes, m_grace, m_minBattery, m_memoryCap, m_memoryPause, m_networkCap})
        connect(box, &QSpinBox::valueChanged, this, &SettingsPage::collect);
    for (QCheckBox* box : {m_pauseOnBattery, m_scheduleEnabled, m_startAtLogin})
        connect(box, &QCheckBox::toggled, this, &SettingsPage::collect);
    connect(m_cpuLimit, &QSlider::valueChanged, this, &SettingsPage::collect);
    connect(m_schedule, &QLineEdit::editingFinished, this, &SettingsPage::collect);
    setGpuDevices({});
    setSettings(m_settings);
}

void SettingsPage::setGpuDevices(const std::vector<GpuDevice>& devices, const QString& whyNone) {
    auto* layout = static_cast<QVBoxLayout*>(m_gpuBox->layout());
    while (QLayoutItem* item = layout->takeAt(0)) {
        delete item->widget();
        delete item->layout();
        delete item;
    }
    m_gpus.clear();
    if (devices.empty()) {
        auto* none = new QLabel(whyNone.isEmpty()
                                    ? QStringLiteral("No OpenCL device found: the CPU computes")
                                    : QStringLiteral("CPU only: %1").arg(whyNone));
        none->setWordWrap(true);
        layout->addWidget(none);
        return;
    }
    for (const GpuDevice& device : devices) {
        auto* enabled = new QCheckBox(QStringLiteral("%1: %2").arg(device.id, device.description));
        enabled->setObjectName(QStringLiteral("gpuEnabled_") + device.id);
        auto* limit = spinBox(QStringLiteral("gpuLimit_") + device.id, 1, 100,
                              QStringLiteral(" % of its time"));
        limit->setSingleStep(5);
        auto* row = new QHBoxLayout;
        row->addWidget(enabled, 1);
        row->addWidget(limit);
        layout->addLayout(row);
        connect(enabled, &QCheckBox::toggled, this, &SettingsPage::collect);
        connect(enabled, &QCheckBox::toggled, limit, &QSpinBox::setEnabled);
        connect(limit, &QSpinBox::valueChanged, this, &SettingsPage::collect);
        m_gpus.push_back(GpuRow{device.id, enabled, limit});
    }
    QString notes = QStringLiteral(
        "Switching a GPU on or off reconnects to the lab nodes (tasks in hand go back to them).");
    if (devices.size() > 1)
        notes += QStringLiteral(" One GPU computes at a time for now: the first one switched on.");
    auto* note = new QLabel(notes);
    note->setWordWrap(true);
    note->setStyleSheet(QStringLiteral("color: #555"));
    layout->addWidget(note);
}

QList<QWidget*> SettingsPage::editors() const {
    QList<QWidget*> all{m_cores,          m_cpuLimit,    m_idleMinutes,     m_grace,
                        m_pauseOnBattery, m_minBattery,  m_scheduleEnabled, m_schedule,
                        m_memoryCap,      m_memoryPause, m_networkCap,      m_startAtLogin};
    for (const GpuRow& row : m_gpus)
        all << row.enabled << row.limit;
    return all;
}

void SettingsPage::setSettings(const VolunteerSettings& settings) {
    m_settings = settings;
    const ThrottleSettings& t = settings.throttle;
    QList<QSharedPointer<QSignalBlocker>> blockers;
    for (QWidget* widget : editors())
        blockers.append(QSharedPointer<QSignalBlocker>::create(widget));
    for (const GpuRow& row : m_gpus) {
        const auto found = std::find_if(t.gpus.begin(), t.gpus.end(), [&](const GpuLimit& gpu) {
            return gpu.device == row.id.toStdString();
        });
        const GpuLimit gpu =
            found != t.gpus.end() ? *found : GpuLimit{row.id.toStdString(), false, 100, {}};
        row.enabled->setChecked(gpu.enabled);
        row.limit->setValue(gpu.limitPercent);
        row.limit->setEnabled(gpu.enabled);
    }
    m_cores->setValue(t.cpuCores);
    m_cores->setSuffix(QLatin1Char(' ') + coresWord(t.cpuCores)); // its signal is blocked here
    m_cpuLimit->setValue(t.cpuLimitPercent);
    m_cpuLimitLabel->setText(QStringLiteral("%1 %").arg(m_cpuLimit->value()));
    m_idleMinutes->setValue(t.idleMinutes);
    m_grace->setValue(t.idleGraceSeconds);
    m_pauseOnBattery->setChecked(t.pauseOnBattery);
    m_minBattery->setValue(t.minBatteryPercent);
    m_scheduleEnabled->setChecked(t.scheduleEnabled);
    m_schedule->setText(settings.scheduleText);
    m_memoryCap->setValue(t.memoryCapMiB);
    m_memoryPause->setValue(t.pauseAboveMemoryPercent);
    m_networkCap->setValue(
        static_cast<int>(std::min<std::int64_t>(t.networkCapMiBPerDay, 1 << 24)));
    m_startAtLogin->setChecked(settings.startAtLogin);
}

void SettingsPage::collect() {
    VolunteerSettings next = m_settings;
    ThrottleSettings& t = next.throttle;
    t.cpuCores = m_cores->value();
    t.cpuLimitPercent = m_cpuLimit->value();
    m_cpuLimitLabel->setText(QStringLiteral("%1 %").arg(t.cpuLimitPercent));
    t.idleMinutes = m_idleMinutes->value();
    t.idleGraceSeconds = m_grace->value();
    t.pauseOnBattery = m_pauseOnBattery->isChecked();
    t.minBatteryPercent = m_minBattery->value();
    t.memoryCapMiB = m_memoryCap->value();
    t.pauseAboveMemoryPercent = m_memoryPause->value();
    t.networkCapMiBPerDay = m_networkCap->value();
    next.startAtLogin = m_startAtLogin->isChecked();
    for (const GpuRow& row : m_gpus) {
        const GpuLimit edited{
            row.id.toStdString(), row.enabled->isChecked(), row.limit->value(), {}};
        auto found = std::find_if(t.gpus.begin(), t.gpus.end(),
                                  [&](const GpuLimit& gpu) { return gpu.device == edited.device; });
        if (found == t.gpus.end()) {
            t.gpus.push_back(edited);
        } else { // keep what the device is
            found->enabled = edited.enabled;
            found->limitPercent = edited.limitPercent;
        }
    }
    QString error;
    const ScheduleUse use = m_scheduleEnabled->isChecked() ? ScheduleUse::On : ScheduleUse::Off;
    if (auto ranges = usableSchedule(m_schedule->text(), use, &error)) {
        m_scheduleError->clear();
        m_scheduleError->hide();
        next.scheduleText = m_schedule->text().trimmed();
        t.schedule = *ranges;
        t.scheduleEnabled = m_scheduleEnabled->isChecked();
    } else {
        // Refused: the last schedule that was usable (or none, switched off) still holds.
        m_scheduleError->setText(QStringLiteral("Not applied: %1.").arg(error));
        m_scheduleError->show();
    }
    if (next.throttle == m_settings.throttle && next.scheduleText == m_settings.scheduleText &&
        next.startAtLogin == m_settings.startAtLogin)
        return;
    m_settings = next;
    Q_EMIT settingsEdited(m_settings);
}

} // namespace goblin::volunteer
