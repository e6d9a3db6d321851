// The host probe's real sources, each faked only where this machine lacks the real one: UPower and
// logind on a private D-Bus daemon (no system bus here), X11 idle time from an Xvfb server; and
// the fallback chain X11 → logind → "unavailable", said in words.
#include <QtTest>

#include <QTemporaryDir>

#include <ctime>

#include "fake_host_services.hpp"
#include "host_probe.hpp"
#include "x11_idle.hpp"

// Xlib last: its macros (None, Bool, …) must not reach the headers above.
#include <X11/Xlib.h>

using namespace goblin::volunteer;

namespace {

quint64 monotonicMicroseconds() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<quint64>(now.tv_sec) * 1'000'000 + static_cast<quint64>(now.tv_nsec) / 1000;
}

// Simulated user input: what the X server does on a key press, reset its idle timer.
void touchX11(const QString& display) {
    Display* connection = XOpenDisplay(display.toLocal8Bit().constData());
    QVERIFY(connection);
    XResetScreenSaver(connection);
    XSync(connection, 0);
    XCloseDisplay(connection);
}

} // namespace

class TestHostProbeSources : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void upowerReportsTheBattery();
    void upowerWithoutBattery();
    void logindIdleHint();
    void nothingAnswersSoIdleIsUnavailable();
    void x11ScreensaverIdleTime();
    void x11MissingFallsBackToLogind();

private:
    HostProbeSources sources(const QString& x11Display = QString());
    goblin::testing::FakeHostServices m_bus;
    QTemporaryDir m_noSupplies; // an empty /sys/class/power_supply
    QProcess m_xvfb;
    QString m_display;
};

void TestHostProbeSources::initTestCase() {
    if (const QString why = m_bus.start(); !why.isEmpty())
        QSKIP(qPrintable(why));
    QVERIFY(m_bus.serve());
    const QString xvfb = QStandardPaths::findExecutable(QStringLiteral("Xvfb"));
    if (xvfb.isEmpty())
        return;
    // -displayfd: Xvfb picks a free display and writes its number to stdout.
    m_xvfb.start(xvfb, {QStringLiteral("-displayfd"), QStringLiteral("1"),
                        QStringLiteral("-nolisten"), QStringLiteral("tcp")});
    if (m_xvfb.waitForStarted(5000) && m_xvfb.waitForReadyRead(10000))
        m_display = QStringLiteral(":") + QString::fromUtf8(m_xvfb.readLine()).trimmed();
}

void TestHostProbeSources::cleanupTestCase() {
    if (m_xvfb.state() == QProcess::NotRunning)
        return;
    m_xvfb.terminate();
    m_xvfb.waitForFinished(5000);
}

HostProbeSources TestHostProbeSources::sources(const QString& x11Display) {
    static int connections = 0;
    ++connections;
    return HostProbeSources{m_bus.connect(QStringLiteral("system-%1").arg(connections)),
                            m_bus.connect(QStringLiteral("session-%1").arg(connections)),
                            x11Display, m_noSupplies.path()};
}

void TestHostProbeSources::upowerReportsTheBattery() {
    m_bus.upower().set(true, 15.4, 2); // 2: discharging
    HostProbe probe(sources());
    const HostState host = probe.sample();
    QVERIFY(host.onBattery);
    QCOMPARE(host.batteryPercent, std::optional<int>(15));
    QCOMPARE(probe.batterySource(), QStringLiteral("UPower (D-Bus)"));
    m_bus.upower().set(true, 99.6, 1); // 1: charging
    const HostState charging = probe.sample();
    QVERIFY(!charging.onBattery);
    QCOMPARE(charging.batteryPercent, std::optional<int>(100));
}

void TestHostProbeSources::upowerWithoutBattery() {
    m_bus.upower().set(false, 0, 0);
    HostProbe probe(sources());
    const HostState host = probe.sample();
    QVERIFY(!host.onBattery);
    QVERIFY(!host.batteryPercent);
    QCOMPARE(probe.batterySource(), QStringLiteral("UPower (D-Bus)"));
}

void TestHostProbeSources::logindIdleHint() {
    m_bus.logind().set(true, monotonicMicroseconds() - 120'000'000);
    HostProbe probe(sources());
    const HostState idle = probe.sample();
    QVERIFY(idle.idleSeconds);
    QVERIFY2(*idle.idleSeconds >= 120 && *idle.idleSeconds < 130,
             qPrintable(QString::number(*idle.idleSeconds)));
    QCOMPARE(probe.idleSource(), QStringLiteral("logind idle hint (D-Bus)"));
    m_bus.logind().set(false, 0);
    QCOMPARE(probe.sample().idleSeconds, std::optional<double>(0.0));
}

void TestHostProbeSources::nothingAnswersSoIdleIsUnavailable() {
    HostProbeSources none = sources();
    m_bus.stopServing();
    HostProbe probe(none);
    const HostState host = probe.sample();
    QVERIFY(!host.idleSeconds);
    QVERIFY2(probe.idleSource().startsWith(QStringLiteral("unavailable (X11: no X11 display;")),
             qPrintable(probe.idleSource()));
    QVERIFY(probe.idleSource().contains(QLatin1String("\"only when idle\" cannot work here")));
    // UPower gone: the probe reads sysfs instead (empty here: no battery).
    QVERIFY(!host.batteryPercent);
    QCOMPARE(probe.batterySource(),
             QStringLiteral("no battery found (UPower and /sys/class/power_supply)"));
    QVERIFY(m_bus.serve());
}

void TestHostProbeSources::x11ScreensaverIdleTime() {
    if (m_display.isEmpty())
        QSKIP("no Xvfb (apt-get install xvfb)");
    HostProbe probe(sources(m_display));
    touchX11(m_display);
    QTest::qWait(1200);
    const HostState idle = probe.sample();
    QCOMPARE(probe.idleSource(), QStringLiteral("X11 screensaver extension"));
    QVERIFY(idle.idleSeconds);
    QVERIFY2(*idle.idleSeconds >= 1.0 && *idle.idleSeconds < 10,
             qPrintable(QString::number(*idle.idleSeconds)));
    touchX11(m_display);
    QVERIFY(*probe.sample().idleSeconds < 0.5);
}

void TestHostProbeSources::x11MissingFallsBackToLogind() {
    QVERIFY(!X11IdleProbe::open(":999"));
    QVERIFY(X11IdleProbe::open(":999").error().message.find("':999'") != std::string::npos);
    m_bus.logind().set(true, monotonicMicroseconds() - 5'000'000);
    HostProbe probe(sources(QStringLiteral(":999")));
    QVERIFY(probe.sample().idleSeconds >= 5.0);
    QCOMPARE(probe.idleSource(), QStringLiteral("logind idle hint (D-Bus)"));
    m_bus.stopServing();
    probe.sample();
    QVERIFY2(probe.idleSource().startsWith(
                 QStringLiteral("unavailable (X11: cannot open the X11 display ':999';")),
             qPrintable(probe.idleSource()));
    QVERIFY(m_bus.serve());
}

QTEST_GUILESS_MAIN(TestHostProbeSources)
#include "test_host_probe_sources.moc"
