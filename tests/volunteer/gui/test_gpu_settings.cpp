// Saved GPU settings follow their device by identity when the platform lists devices in another
// order; settings of older versions (no identity) match by id; new devices start switched off.
#include <QtTest>

#include "gpu_settings.hpp"

using namespace goblin::volunteer;

class TestGpuSettings : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void followsTheDeviceWhenTheOrderChanges();
    void oldSettingsMatchById();
    void newDevicesStartOffAndMissingOnesAreKept();
};

void TestGpuSettings::followsTheDeviceWhenTheOrderChanges() {
    const std::vector<GpuLimit> saved{{"gpu0", true, 40, "Radeon / AMD"},
                                      {"gpu1", false, 100, "RTX / NVIDIA"}};
    // A new driver lists the NVIDIA card first.
    const auto matched =
        matchGpuSettings(saved, {{"gpu0", "RTX / NVIDIA"}, {"gpu1", "Radeon / AMD"}});
    QCOMPARE(matched.size(), std::size_t{2});
    QCOMPARE(matched[0], (GpuLimit{"gpu0", false, 100, "RTX / NVIDIA"}));
    QCOMPARE(matched[1], (GpuLimit{"gpu1", true, 40, "Radeon / AMD"}));
}

void TestGpuSettings::oldSettingsMatchById() {
    const std::vector<GpuLimit> saved{{"gpu0", true, 70, {}}};
    const auto matched = matchGpuSettings(saved, {{"gpu0", "pthread / PoCL"}});
    QCOMPARE(matched, (std::vector<GpuLimit>{{"gpu0", true, 70, "pthread / PoCL"}}));
}

void TestGpuSettings::newDevicesStartOffAndMissingOnesAreKept() {
    const std::vector<GpuLimit> saved{{"gpu1", true, 50, "eGPU / NVIDIA"}};
    // The external GPU is unplugged; an integrated one is listed as gpu0.
    const auto matched = matchGpuSettings(saved, {{"gpu0", "Iris / Intel"}});
    QCOMPARE(matched.size(), std::size_t{2});
    QCOMPARE(matched[0], (GpuLimit{"gpu0", false, 100, "Iris / Intel"}));
    QCOMPARE(matched[1], saved[0]); // remembered for when it is back
    // Back, but now listed as gpu0 before the integrated one: it is on again, at its limit.
    const auto back =
        matchGpuSettings(matched, {{"gpu0", "eGPU / NVIDIA"}, {"gpu1", "Iris / Intel"}});
    QCOMPARE(back[0], (GpuLimit{"gpu0", true, 50, "eGPU / NVIDIA"}));
    QCOMPARE(back[1], (GpuLimit{"gpu1", false, 100, "Iris / Intel"}));
}

QTEST_GUILESS_MAIN(TestGpuSettings)
#include "test_gpu_settings.moc"
