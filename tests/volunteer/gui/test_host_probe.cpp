// The battery probe's /sys/class/power_supply reader on a fake sysfs tree: on battery only when
// no mains supply is online and a battery discharges; the first battery's level; junk ignored.
#include <QtTest>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include "host_probe.hpp"

using namespace goblin::volunteer;

namespace {

void writeSupply(const QDir& root, const QString& name, const QMap<QString, QString>& files) {
    QVERIFY(root.mkpath(name));
    for (auto it = files.begin(); it != files.end(); ++it) {
        QFile file(root.filePath(name + QLatin1Char('/') + it.key()));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(it.value().toUtf8() + '\n');
    }
}

} // namespace

class TestHostProbe : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void laptopOnBattery();
    void laptopCharging();
    void desktopWithoutBattery();
    void junkValuesAreIgnored();
    void memoryIsAPercentage();
};

void TestHostProbe::laptopOnBattery() {
    QTemporaryDir dir;
    writeSupply(dir.path(), QStringLiteral("AC"), {{"type", "Mains"}, {"online", "0"}});
    writeSupply(
        dir.path(), QStringLiteral("BAT0"),
        {{"type", "Battery"}, {"present", "1"}, {"capacity", "42"}, {"status", "Discharging"}});
    HostState host;
    readPowerSupply(dir.path().toStdString(), host);
    QVERIFY(host.onBattery);
    QCOMPARE(host.batteryPercent, std::optional<int>(42));
}

void TestHostProbe::laptopCharging() {
    QTemporaryDir dir;
    writeSupply(dir.path(), QStringLiteral("ACAD"), {{"type", "Mains"}, {"online", "1"}});
    writeSupply(dir.path(), QStringLiteral("BAT1"),
                {{"type", "Battery"}, {"capacity", "15"}, {"status", "Charging"}});
    HostState host;
    readPowerSupply(dir.path().toStdString(), host);
    QVERIFY(!host.onBattery);
    QCOMPARE(host.batteryPercent, std::optional<int>(15));
}

void TestHostProbe::desktopWithoutBattery() {
    QTemporaryDir dir;
    HostState host;
    readPowerSupply(dir.path().toStdString(), host);
    QVERIFY(!host.onBattery);
    QVERIFY(!host.batteryPercent);
    readPowerSupply(dir.filePath(QStringLiteral("missing")).toStdString(), host);
    QVERIFY(!host.batteryPercent);
}

void TestHostProbe::junkValuesAreIgnored() {
    QTemporaryDir dir;
    writeSupply(dir.path(), QStringLiteral("BAT0"),
                {{"type", "Battery"}, {"capacity", "lots"}, {"status", "Discharging"}});
    writeSupply(dir.path(), QStringLiteral("BAT1"), {{"type", "Battery"}, {"capacity", "250"}});
    writeSupply(dir.path(), QStringLiteral("hidpp_battery_0"),
                {{"type", "Battery"}, {"present", "0"}, {"capacity", "3"}});
    HostState host;
    readPowerSupply(dir.path().toStdString(), host);
    QVERIFY(host.onBattery);
    QCOMPARE(host.batteryPercent, std::optional<int>(100)); // clamped, the unreadable one skipped
}

void TestHostProbe::memoryIsAPercentage() {
    const double used = memoryUsedPercent();
    QVERIFY(used > 0 && used <= 100);
}

QTEST_APPLESS_MAIN(TestHostProbe)
#include "test_host_probe.moc"
