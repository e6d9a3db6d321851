#include "host_probe.hpp"

#include "host_readings.hpp"
#include "x11_idle.hpp"

#include <QDBusConnection>
#include <QDBusMessage>
#include <QDBusVariant>

#include <algorithm>
#include <ctime>
#include <thread>

namespace goblin::volunteer {
namespace {

constexpr int kDbusTimeoutMs = 200;

double monotonicSeconds() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

// One D-Bus round trip with a short timeout; no introspection (QDBusInterface would make a
// blocking introspection call with the default 25 s timeout first).
std::optional<QVariant> dbusCall(const QDBusConnection& bus, const QString& service,
                                 const QString& path, const QString& interface,
                                 const QString& method, const QVariantList& args = {}) {
    if (!bus.isConnected())
        return std::nullopt;
    QDBusMessage call = QDBusMessage::createMethodCall(service, path, interface, method);
    call.setArguments(args);
    const QDBusMessage reply = QDBusConnection(bus).call(call, QDBus::Block, kDbusTimeoutMs);
    if (reply.type() != QDBusMessage::ReplyMessage || reply.arguments().isEmpty())
        return std::nullopt;
    return reply.arguments().constFirst();
}

std::optional<QVariant> dbusProperty(const QDBusConnection& bus, const QString& service,
                                     const QString& path, const QString& interface,
                                     const QString& name) {
    auto value = dbusCall(bus, service, path, QStringLiteral("org.freedesktop.DBus.Properties"),
                          QStringLiteral("Get"), {interface, name});
    if (!value)
        return std::nullopt;
    return value->value<QDBusVariant>().variant();
}

std::optional<double> logindIdle(const QDBusConnection& bus) {
    const QString service = QStringLiteral("org.freedesktop.login1");
    const QString path = QStringLiteral("/org/freedesktop/login1/session/auto");
    const QString interface = QStringLiteral("org.freedesktop.login1.Session");
    const auto hint = dbusProperty(bus, service, path, interface, QStringLiteral("IdleHint"));
    if (!hint)
        return std::nullopt;
    if (!hint->toBool())
        return 0.0;
    // µs on CLOCK_MONOTONIC
    const auto since =
        dbusProperty(bus, service, path, interface, QStringLiteral("IdleSinceHintMonotonic"));
    if (!since)
        return std::nullopt;
    return std::max(0.0, monotonicSeconds() - static_cast<double>(since->toULongLong()) / 1e6);
}

std::optional<double> sessionBusIdle(const QDBusConnection& bus) {
    // GNOME (Mutter) and KDE/others (freedesktop ScreenSaver) both answer in milliseconds.
    if (auto ms =
            dbusCall(bus, QStringLiteral("org.gnome.Mutter.IdleMonitor"),
                     QStringLiteral("/org/gnome/Mutter/IdleMonitor/Core"),
                     QStringLiteral("org.gnome.Mutter.IdleMonitor"), QStringLiteral("GetIdletime")))
        return static_cast<double>(ms->toULongLong()) / 1000.0;
    if (auto ms = dbusCall(
            bus, QStringLiteral("org.freedesktop.ScreenSaver"), QStringLiteral("/ScreenSaver"),
            QStringLiteral("org.freedesktop.ScreenSaver"), QStringLiteral("GetSessionIdleTime")))
        return static_cast<double>(ms->toUInt()) / 1000.0;
    return std::nullopt;
}

bool upowerBattery(const QDBusConnection& bus, HostState& host) {
    const QString service = QStringLiteral("org.freedesktop.UPower");
    const QString path = QStringLiteral("/org/freedesktop/UPower/devices/DisplayDevice");
    const QString interface = QStringLiteral("org.freedesktop.UPower.Device");
    const auto present = dbusProperty(bus, service, path, interface, QStringLiteral("IsPresent"));
    if (!present)
        return false;
    if (!present->toBool())
        return true; // UPower answers: no battery
    constexpr uint kDischarging = 2;
    const auto level = dbusProperty(bus, service, path, interface, QStringLiteral("Percentage"));
    const auto state = dbusProperty(bus, service, path, interface, QStringLiteral("State"));
    if (level)
        host.batteryPercent = std::clamp(static_cast<int>(level->toDouble() + 0.5), 0, 100);
    host.onBattery = state && state->toUInt() == kDischarging;
    return true;
}

} // namespace

HostProbe::HostProbe(HostProbeSources sources) : m_sources(std::move(sources)) {
    m_idleSource = QStringLiteral("not probed yet");
    m_batterySource = m_idleSource;
    openX11();
}

HostProbe::~HostProbe() = default;

void HostProbe::openX11() {
    QString display;
    if (m_sources.x11Display) {
        display = *m_sources.x11Display;
    } else if (qEnvironmentVariable("XDG_SESSION_TYPE") == QLatin1String("wayland") ||
               qEnvironmentVariableIsSet("WAYLAND_DISPLAY")) {
        m_x11Problem = QStringLiteral("a Wayland session (X11 would see only X programs' input)");
        return;
    } else {
        display = qEnvironmentVariable("DISPLAY");
    }
    if (display.isEmpty()) {
        m_x11Problem = QStringLiteral("no X11 display");
        return;
    }
    auto probe = X11IdleProbe::open(display.toStdString());
    if (!probe) {
        m_x11Problem = QString::fromStdString(probe.error().message);
        return;
    }
    m_x11 = std::move(*probe);
}

HostState HostProbe::sample() {
    HostState host;
    host.idleSeconds = probeIdle();
    probeBattery(host);
    host.memoryUsedPercent = memoryUsedPercent();
    host.networkBytesToday = m_networkBytesToday;
    host.hardwareThreads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return host;
}

std::optional<double> HostProbe::probeIdle() {
    if (m_x11) {
        if (auto idle = m_x11->idleSeconds()) {
            m_idleSource = QStringLiteral("X11 screensaver extension");
            return idle;
        }
    }
    if (auto idle = logindIdle(m_sources.systemBus)) {
        m_idleSource = QStringLiteral("logind idle hint (D-Bus)");
        return idle;
    }
    if (auto idle = sessionBusIdle(m_sources.sessionBus)) {
        m_idleSource = QStringLiteral("desktop idle monitor (D-Bus)");
        return idle;
    }
    m_idleSource = QStringLiteral("unavailable (X11: %1; neither logind's idle hint nor a desktop "
                                  "idle monitor answers on D-Bus), so \"only when idle\" cannot "
                                  "work here")
                       .arg(m_x11 ? QStringLiteral("the query failed") : m_x11Problem);
    return std::nullopt;
}

void HostProbe::probeBattery(HostState& host) {
    if (upowerBattery(m_sources.systemBus, host)) {
        m_batterySource = QStringLiteral("UPower (D-Bus)");
        return;
    }
    readPowerSupply(m_sources.powerSupplyRoot.toStdString(), host);
    m_batterySource = host.batteryPercent
                          ? QStringLiteral("/sys/class/power_supply")
                          : QStringLiteral("no battery found (UPower and /sys/class/power_supply)");
}

} // namespace goblin::volunteer
