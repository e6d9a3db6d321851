// The headless host probe on fake sources (no X11, a fake utmp, /dev, sysfs and meminfo): idle
// time from the terminals, battery and memory use from the files, and it says which idle source
// answered. Also the file readers the desktop's HostProbe shares.
#include <QtTest>

#include <fstream>

#include "headless_probe.hpp"
#include "host_readings.hpp"
#include "utmp_fixture.hpp"

using namespace goblin::volunteer;

class TestHeadlessProbe : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void samplesEveryReading();
    void meminfoWithoutAvailableIsZero();
};

namespace {

void writeFile(const std::filesystem::path& path, const std::string& text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
}

} // namespace

void TestHeadlessProbe::samplesEveryReading() {
    testing::UtmpFixture fixture;
    fixture.addSession("pts/0", 1000);
    QTemporaryDir dir;
    const std::filesystem::path root = dir.path().toStdString();
    writeFile(root / "power/BAT0/type", "Battery\n");
    writeFile(root / "power/BAT0/capacity", "64\n");
    writeFile(root / "power/BAT0/status", "Discharging\n");
    writeFile(root / "meminfo", "MemTotal:  1000 kB\nMemFree: 10 kB\nMemAvailable:  250 kB\n");
    HeadlessProbeSources sources;
    sources.x11Display = std::string();
    sources.tty = TtyIdleSources{fixture.utmp(), fixture.dev(), [] { return 1120.0; }};
    sources.powerSupplyRoot = root / "power";
    sources.meminfo = root / "meminfo";
    HeadlessHostProbe probe(sources);
    QCOMPARE(probe.idleSource(), std::string("not probed yet"));
    const HostState host = probe.sample();
    QCOMPARE(host.idleSeconds, std::optional<double>(120.0));
    QVERIFY(host.onBattery);
    QCOMPARE(host.batteryPercent, std::optional<int>(64));
    QCOMPARE(host.memoryUsedPercent, 75.0);
    QVERIFY(host.hardwareThreads >= 1);
    QCOMPARE(probe.idleSource(), std::string("terminal input of 1 logged-in session(s) (utmp)"));
}

void TestHeadlessProbe::meminfoWithoutAvailableIsZero() {
    QTemporaryDir dir;
    const std::filesystem::path meminfo = dir.path().toStdString() + "/meminfo";
    writeFile(meminfo, "MemTotal: 1000 kB\n");
    QCOMPARE(memoryUsedPercent(meminfo), 100.0); // nothing available of 1000 kB
    QCOMPARE(memoryUsedPercent(dir.path().toStdString() + "/missing"), 0.0);
    const double real = memoryUsedPercent();
    QVERIFY(real > 0 && real <= 100);
}

QTEST_APPLESS_MAIN(TestHeadlessProbe)
#include "test_headless_probe.moc"
