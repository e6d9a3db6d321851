// Test helper: a private D-Bus daemon (`dbus-daemon --session`) with a tiny UPower and logind on
// it, for machines without a system bus. The fake services live on their own thread, so the probe
// under test can make blocking calls from the test's thread.
#pragma once

#include <QDBusConnection>
#include <QMutex>
#include <QProcess>
#include <QStandardPaths>
#include <QThread>

#include <memory>

namespace goblin::testing {

class FakeUPowerDevice : public QObject {
    Q_OBJECT
    Q_CLASSINFO("D-Bus Interface", "org.freedesktop.UPower.Device")
    Q_PROPERTY(bool IsPresent READ isPresent)
    Q_PROPERTY(double Percentage READ percentage)
    Q_PROPERTY(uint State READ state)
public:
    void set(bool present, double percentage, uint state) {
        QMutexLocker lock(&m_mutex);
        m_present = present;
        m_percentage = percentage;
        m_state = state;
    }
    bool isPresent() const {
        QMutexLocker lock(&m_mutex);
        return m_present;
    }
    double percentage() const {
        QMutexLocker lock(&m_mutex);
        return m_percentage;
    }
    uint state() const {
        QMutexLocker lock(&m_mutex);
        return m_state;
    }

private:
    mutable QMutex m_mutex;
    bool m_present = false;
    double m_percentage = 0;
    uint m_state = 0;
};

class FakeLogindSession : public QObject {
    Q_OBJECT
    Q_CLASSINFO("D-Bus Interface", "org.freedesktop.login1.Session")
    Q_PROPERTY(bool IdleHint READ idleHint)
    Q_PROPERTY(qulonglong IdleSinceHintMonotonic READ idleSince)
public:
    void set(bool idle, qulonglong sinceMicroseconds) {
        QMutexLocker lock(&m_mutex);
        m_idle = idle;
        m_since = sinceMicroseconds;
    }
    bool idleHint() const {
        QMutexLocker lock(&m_mutex);
        return m_idle;
    }
    qulonglong idleSince() const {
        QMutexLocker lock(&m_mutex);
        return m_since;
    }

private:
    mutable QMutex m_mutex;
    bool m_idle = false;
    qulonglong m_since = 0;
};

class FakeHostServices {
public:
    ~FakeHostServices() {
        stopServing();
        m_thread.quit();
        m_thread.wait();
        m_daemon.kill();
        m_daemon.waitForFinished(5000);
    }

    // Empty when the bus runs, else why not (the caller skips).
    QString start() {
        const QString daemon = QStandardPaths::findExecutable(QStringLiteral("dbus-daemon"));
        if (daemon.isEmpty())
            return QStringLiteral("dbus-daemon is not installed");
        m_daemon.start(daemon, {QStringLiteral("--session"), QStringLiteral("--nofork"),
                                QStringLiteral("--print-address")});
        if (!m_daemon.waitForStarted(5000) || !m_daemon.waitForReadyRead(5000))
            return QStringLiteral("dbus-daemon did not start");
        m_address = QString::fromUtf8(m_daemon.readLine()).trimmed();
        m_upower.moveToThread(&m_thread);
        m_logind.moveToThread(&m_thread);
        m_thread.start();
        return {};
    }

    QString address() const { return m_address; }
    QDBusConnection connect(const QString& name) const {
        return QDBusConnection::connectToBus(m_address, name);
    }

    // Registers UPower's display device and logind's session under their real names.
    bool serve() {
        m_service = std::make_unique<QDBusConnection>(connect(QStringLiteral("fake-host")));
        return m_service->isConnected() &&
               m_service->registerObject(
                   QStringLiteral("/org/freedesktop/UPower/devices/DisplayDevice"), &m_upower,
                   QDBusConnection::ExportAllProperties) &&
               m_service->registerObject(QStringLiteral("/org/freedesktop/login1/session/auto"),
                                         &m_logind, QDBusConnection::ExportAllProperties) &&
               m_service->registerService(QStringLiteral("org.freedesktop.UPower")) &&
               m_service->registerService(QStringLiteral("org.freedesktop.login1"));
    }

    // The services leave the bus (as when UPower or logind is not running).
    void stopServing() {
        if (!m_service)
            return;
        m_service->unregisterService(QStringLiteral("org.freedesktop.UPower"));
        m_service->unregisterService(QStringLiteral("org.freedesktop.login1"));
        m_service.reset();
        QDBusConnection::disconnectFromBus(QStringLiteral("fake-host"));
    }

    FakeUPowerDevice& upower() { return m_upower; }
    FakeLogindSession& logind() { return m_logind; }

private:
    QProcess m_daemon;
    QString m_address;
    QThread m_thread;
    FakeUPowerDevice m_upower;
    FakeLogindSession m_logind;
    std::unique_ptr<QDBusConnection> m_service;
};

} // namespace goblin::testing
