#include "settings_store.hpp"

#include "gui_resources.hpp"

#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QStandardPaths>

#include <algorithm>

namespace goblin::volunteer {
namespace {

const QStringList kDays{QStringLiteral("mon"), QStringLiteral("tue"), QStringLiteral("wed"),
                        QStringLiteral("thu"), QStringLiteral("fri"), QStringLiteral("sat"),
                        QStringLiteral("sun")};

// Reads an integer setting, clamping it into [low, high]; a value that is not a number falls back
// to the default. Either correction is logged in `warnings`.
qint64 readInt(QSettings& store, const QString& key, qint64 fallback, qint64 low, qint64 high,
               QStringList& warnings) {
    if (!store.contains(key))
        return fallback;
    bool ok = false;
    const qint64 value = store.value(key).toString().trimmed().toLongLong(&ok);
    if (!ok) {
        warnings << QStringLiteral("setting %1 = '%2' is not a number; using %3")
                        .arg(key, store.value(key).toString())
                        .arg(fallback);
        return fallback;
    }
    const qint64 clamped = std::clamp(value, low, high);
    if (clamped != value)
        warnings << QStringLiteral("setting %1 = %2 is outside %3-%4; using %5")
                        .arg(key)
                        .arg(value)
                        .arg(low)
                        .arg(high)
                        .arg(clamped);
    return clamped;
}

bool readBool(QSettings& store, const QString& key, bool fallback, QStringList& warnings) {
    if (!store.contains(key))
        return fallback;
    const QString text = store.value(key).toString().trimmed().toLower();
    if (text == QLatin1String("true") || text == QLatin1String("1"))
        return true;
    if (text == QLatin1String("false") || text == QLatin1String("0"))
        return false;
    warnings << QStringLiteral("setting %1 = '%2' is not true or false; using %3")
                    .arg(key, text, fallback ? QStringLiteral("true") : QStringLiteral("false"));
    return fallback;
}

std::optional<int> minuteOf(const QString& hhmm) {
    const QStringList parts = hhmm.split(QLatin1Char(':'));
    bool okHour = false, okMinute = false;
    const int hour = parts.value(0).toInt(&okHour);
    const int minute = parts.value(1).toInt(&okMinute);
    if (parts.size() != 2 || !okHour || !okMinute || minute < 0 || minute > 59 || hour < 0 ||
        hour > 24 || (hour == 24 && minute != 0))
        return std::nullopt;
    return hour * 60 + minute;
}

// Reads a QSettings array's size ("<array>/size"), clamped to `most`.
int readArraySize(QSettings& store, const QString& array, int most, QStringList& warnings) {
    return static_cast<int>(readInt(store, array + QStringLiteral("/size"), 0, 0, most, warnings));
}

std::vector<AttachedNode> readNodes(QSettings& store, QStringList& warnings) {
    std::vector<AttachedNode> nodes;
    auto keep = [&](const QString& key, const QString& url, int share) {
        if (const auto problem = nodeUrlProblem(url)) {
            warnings << QStringLiteral("setting %1: %2 Dropped.").arg(key, *problem);
            return;
        }
        for (const AttachedNode& node : nodes)
            if (node.url == url.trimmed()) {
                warnings << QStringLiteral("setting %1 = '%2' repeats a lab node; dropped")
                                .arg(key, url);
                return;
            }
        nodes.push_back(AttachedNode{url.trimmed(), share});
    };
    const QString legacy = QStringLiteral("node/url"); // one node, before shares existed
    if (!store.contains(QStringLiteral("nodes/size"))) {
        if (!store.value(legacy).toString().trimmed().isEmpty())
            keep(legacy, store.value(legacy).toString(), 1);
        return nodes;
    }
    const int size = readArraySize(store, QStringLiteral("nodes"), kMaxNodes, warnings);
    for (int i = 1; i <= size; ++i) {
        const QString base = QStringLiteral("nodes/%1/").arg(i);
        const int share = static_cast<int>(
            readInt(store, base + QStringLiteral("share"), 1, 1, kMaxShare, warnings));
        keep(base + QStringLiteral("url"), store.value(base + QStringLiteral("url")).toString(),
             share);
    }
    return nodes;
}

std::vector<GpuLimit> readGpus(QSettings& store, QStringList& warnings) {
    static const QRegularExpression gpuName(QStringLiteral("^gpu([0-9]|[1-5][0-9]|6[0-3])$"));
    std::vector<GpuLimit> gpus;
    const int size = readArraySize(store, QStringLiteral("gpus"), 64, warnings);
    for (int i = 1; i <= size; ++i) {
        const QString base = QStringLiteral("gpus/%1/").arg(i);
        const QString device = store.value(base + QStringLiteral("device")).toString().trimmed();
        const bool repeated = std::any_of(gpus.begin(), gpus.end(), [&](const GpuLimit& gpu) {
            return gpu.device == device.toStdString();
        });
        if (!gpuName.match(device).hasMatch() || repeated) {
            warnings << QStringLiteral("setting %1device = '%2' is not a GPU name like gpu0 (or "
                                       "repeats one); dropped")
                            .arg(base, device);
            continue;
        }
        GpuLimit gpu;
        gpu.device = device.toStdString();
        gpu.enabled = readBool(store, base + QStringLiteral("enabled"), false, warnings);
        gpu.limitPercent = static_cast<int>(
            readInt(store, base + QStringLiteral("limit_percent"), 100, 1, 100, warnings));
        gpu.identity =
            store.value(base + QStringLiteral("identity")).toString().left(256).toStdString();
        gpus.push_back(gpu);
    }
    return gpus;
}

} // namespace

std::optional<std::vector<ScheduleRange>> parseSchedule(const QString& text, QString* error) {
    static const QRegularExpression item(QStringLiteral(
        R"(^\s*([A-Za-z]{3})(?:\s*-\s*([A-Za-z]{3}))?\s+(\d{1,2}:\d{2})\s*-\s*(\d{1,2}:\d{2})\s*$)"));
    std::vector<ScheduleRange> ranges;
    for (const QString& part : text.split(QLatin1Char(';'), Qt::SkipEmptyParts)) {
        if (part.trimmed().isEmpty())
            continue;
        const auto match = item.match(part);
        const int first =
            match.hasMatch() ? static_cast<int>(kDays.indexOf(match.captured(1).toLower())) : -1;
        const int last = match.captured(2).isEmpty()
                             ? first
                             : static_cast<int>(kDays.indexOf(match.captured(2).toLower()));
        const auto start = minuteOf(match.captured(3));
        const auto end = minuteOf(match.captured(4));
        if (first < 0 || last < 0 || !start || !end || *start == 24 * 60) {
            if (error)
                *error = QStringLiteral("cannot read '%1': write e.g. 'Mon-Fri 09:00-17:00'")
                             .arg(part.trimmed());
            return std::nullopt;
        }
        // A span like Fri-Mon wraps around the week.
        for (int day = first;; day = (day + 1) % 7) {
            ranges.push_back(ScheduleRange{day, *start, *end});
            if (day == last)
                break;
        }
    }
    return ranges;
}

std::optional<std::vector<ScheduleRange>> usableSchedule(const QString& text, ScheduleUse use,
                                                         QString* error) {
    auto ranges = parseSchedule(text, error);
    if (!ranges || use == ScheduleUse::Off || !ranges->empty())
        return ranges;
    if (error)
        *error = QStringLiteral("the schedule names no hours: write when to compute, e.g. "
                                "'Mon-Fri 18:00-08:00', or switch the schedule off");
    return std::nullopt;
}

LoadedSettings loadSettings(QSettings& store) {
    LoadedSettings loaded;
    QStringList& w = loaded.warnings;
    ThrottleSettings& t = loaded.settings.throttle;
    t.cpuCores = static_cast<int>(readInt(store, QStringLiteral("cpu/cores"), 0, 0, 1024, w));
    t.cpuLimitPercent =
        static_cast<int>(readInt(store, QStringLiteral("cpu/limit_percent"), 100, 1, 100, w));
    t.idleMinutes =
        static_cast<int>(readInt(store, QStringLiteral("idle/minutes"), 0, 0, 24 * 60, w));
    t.idleGraceSeconds =
        static_cast<int>(readInt(store, QStringLiteral("idle/grace_seconds"), 30, 0, 3600, w));
    t.pauseOnBattery = readBool(store, QStringLiteral("battery/pause_on_battery"), true, w);
    t.minBatteryPercent =
        static_cast<int>(readInt(store, QStringLiteral("battery/min_percent"), 20, 0, 100, w));
    t.scheduleEnabled = readBool(store, QStringLiteral("schedule/enabled"), false, w);
    t.memoryCapMiB =
        static_cast<int>(readInt(store, QStringLiteral("memory/cap_mib"), 0, 0, 1 << 24, w));
    t.pauseAboveMemoryPercent = static_cast<int>(
        readInt(store, QStringLiteral("memory/pause_above_percent"), 90, 0, 100, w));
    t.networkCapMiBPerDay =
        readInt(store, QStringLiteral("network/cap_mib_per_day"), 0, 0, 1LL << 30, w);
    loaded.settings.scheduleText = store.value(QStringLiteral("schedule/hours")).toString();
    QString error;
    const ScheduleUse use = t.scheduleEnabled ? ScheduleUse::On : ScheduleUse::Off;
    if (auto ranges = usableSchedule(loaded.settings.scheduleText, use, &error)) {
        t.schedule = *ranges;
    } else {
        w << QStringLiteral("setting schedule/hours: %1; the schedule is off").arg(error);
        t.scheduleEnabled = false;
        loaded.settings.scheduleText.clear();
    }
    t.gpus = readGpus(store, w);
    loaded.settings.nodes = readNodes(store, w);
    loaded.settings.caFile = store.value(QStringLiteral("tls/ca_file")).toString().trimmed();
    loaded.settings.startAtLogin =
        readBool(store, QStringLiteral("general/start_at_login"), false, w);
    return loaded;
}

bool isFirstRun(const QSettings& store) {
    return store.allKeys().isEmpty();
}

void saveSettings(QSettings& store, const VolunteerSettings& settings) {
    const ThrottleSettings& t = settings.throttle;
    store.setValue(QStringLiteral("cpu/cores"), t.cpuCores);
    store.setValue(QStringLiteral("cpu/limit_percent"), t.cpuLimitPercent);
    store.setValue(QStringLiteral("idle/minutes"), t.idleMinutes);
    store.setValue(QStringLiteral("idle/grace_seconds"), t.idleGraceSeconds);
    store.setValue(QStringLiteral("battery/pause_on_battery"), t.pauseOnBattery);
    store.setValue(QStringLiteral("battery/min_percent"), t.minBatteryPercent);
    store.setValue(QStringLiteral("schedule/enabled"), t.scheduleEnabled);
    store.setValue(QStringLiteral("schedule/hours"), settings.scheduleText);
    store.setValue(QStringLiteral("memory/cap_mib"), t.memoryCapMiB);
    store.setValue(QStringLiteral("memory/pause_above_percent"), t.pauseAboveMemoryPercent);
    store.setValue(QStringLiteral("network/cap_mib_per_day"),
                   static_cast<qint64>(t.networkCapMiBPerDay));
    store.remove(QStringLiteral("node"));
    store.remove(QStringLiteral("nodes"));
    store.setValue(QStringLiteral("nodes/size"), static_cast<int>(settings.nodes.size()));
    for (std::size_t i = 0; i < settings.nodes.size(); ++i) {
        const QString base = QStringLiteral("nodes/%1/").arg(i + 1);
        store.setValue(base + QStringLiteral("url"), settings.nodes[i].url);
        store.setValue(base + QStringLiteral("share"), settings.nodes[i].share);
    }
    store.setValue(QStringLiteral("tls/ca_file"), settings.caFile);
    store.remove(QStringLiteral("gpus"));
    store.setValue(QStringLiteral("gpus/size"), static_cast<int>(t.gpus.size()));
    for (std::size_t i = 0; i < t.gpus.size(); ++i) {
        const QString base = QStringLiteral("gpus/%1/").arg(i + 1);
        store.setValue(base + QStringLiteral("device"), QString::fromStdString(t.gpus[i].device));
        store.setValue(base + QStringLiteral("enabled"), t.gpus[i].enabled);
        store.setValue(base + QStringLiteral("limit_percent"), t.gpus[i].limitPercent);
        store.setValue(base + QStringLiteral("identity"),
                       QString::fromStdString(t.gpus[i].identity));
    }
    store.setValue(QStringLiteral("general/start_at_login"), settings.startAtLogin);
}

bool applyStartAtLogin(bool enabled, QString* error) {
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation) +
                        QStringLiteral("/autostart");
    const QString path = dir + QStringLiteral("/goblin-volunteer.desktop");
    if (!enabled)
        return !QFile::exists(path) || QFile::remove(path);
    initGuiResources();
    QFile entry(QStringLiteral(":/goblin/goblin-volunteer-autostart.desktop"));
    QFile file(path);
    if (!entry.open(QIODevice::ReadOnly) || !QDir().mkpath(dir) ||
        !file.open(QIODevice::WriteOnly | QIODevice::Truncate) || file.write(entry.readAll()) < 0) {
        if (error)
            *error = QStringLiteral("cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    return true;
}

} // namespace goblin::volunteer
