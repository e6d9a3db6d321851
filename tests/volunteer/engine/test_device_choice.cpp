// Tests of --devices parsing, the --list-devices table and the hello's capabilities.devices.
#include <QtTest/QtTest>

#include "device_choice.hpp"

using goblin::ErrorCode;
using goblin::compute::OpenClDeviceInfo;
using goblin::volunteer::CpuDescription;
using goblin::volunteer::describeDevices;
using goblin::volunteer::formatDeviceLines;
using goblin::volunteer::formatDeviceTable;
using goblin::volunteer::gpuDevices;
using goblin::volunteer::OpenClCpuDevices;
using goblin::volunteer::parseDeviceChoice;
using goblin::volunteer::parseDeviceLines;

namespace {

OpenClDeviceInfo fakeGpu() {
    OpenClDeviceInfo info;
    info.index = 1;
    info.platform = "NVIDIA CUDA";
    info.name = "NVIDIA H200";
    info.vendor = "NVIDIA Corporation";
    info.driverVersion = "550.54";
    info.type = "gpu";
    info.globalMemoryBytes = std::uint64_t{140} << 30;
    info.maxAllocBytes = std::uint64_t{35} << 30;
    info.computeUnits = 132;
    info.fp64 = true;
    info.fp16 = true;
    return info;
}

} // namespace

class TestDeviceChoice : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void parsesValidLists();
    void refusesBadLists_data();
    void refusesBadLists();
    void tableListsCpuAndDevices();
    void tableSaysWhenThereIsNoOpenCl();
    void helloDescribesDevices();
    void openClCpuIsNotAGpu();
    void deviceLinesRoundTrip();
};

void TestDeviceChoice::parsesValidLists() {
    auto cpu = parseDeviceChoice("cpu");
    QVERIFY(cpu && cpu->cpu && cpu->gpus.empty());
    auto both = parseDeviceChoice("cpu,gpu0,gpu12");
    QVERIFY(both && both->cpu);
    QCOMPARE(both->gpus, (std::vector<int>{0, 12}));
    auto gpu = parseDeviceChoice("gpu1");
    QVERIFY(gpu && !gpu->cpu);
    QCOMPARE(gpu->gpus, (std::vector<int>{1}));
}

void TestDeviceChoice::refusesBadLists_data() {
    QTest::addColumn<QString>("text");
    for (const char* bad : {"", ",", "cpu,", "gpu", "gpu-1", "gpux", "gpu0x", "GPU0", "cpu,cpu",
                            "gpu0,gpu0", "gpu64", "tpu0", " cpu"})
        QTest::newRow(bad) << QString(bad);
}

void TestDeviceChoice::refusesBadLists() {
    QFETCH(QString, text);
    auto choice = parseDeviceChoice(text.toStdString());
    QVERIFY(!choice.has_value());
    QCOMPARE(choice.error().code, ErrorCode::InvalidInput);
}

void TestDeviceChoice::tableListsCpuAndDevices() {
    const std::string table =
        formatDeviceTable(CpuDescription{2, std::int64_t{4} << 30, "SkylakeX"},
                          std::vector<OpenClDeviceInfo>{fakeGpu()});
    QVERIFY2(table.find("cpu    cpu-eigen       CPU (Eigen + OpenBLAS SkylakeX)") !=
                 std::string::npos,
             table.c_str());
    QVERIFY2(table.find("gpu1   opencl-clblast  NVIDIA H200 (gpu)") != std::string::npos,
             table.c_str());
    QVERIFY2(table.find("140.0 GiB") != std::string::npos, table.c_str());
    QVERIFY2(table.find("132") != std::string::npos, table.c_str());
}

void TestDeviceChoice::tableSaysWhenThereIsNoOpenCl() {
    const std::string table =
        formatDeviceTable(CpuDescription{2, 1 << 30, {}}, std::vector<OpenClDeviceInfo>{});
    QVERIFY2(table.find("no platform or device found") != std::string::npos, table.c_str());
    QVERIFY2(table.find("cpu-eigen       CPU (Eigen + OpenBLAS) ") != std::string::npos,
             table.c_str());
}

void TestDeviceChoice::helloDescribesDevices() {
    const auto gpu = fakeGpu();
    const auto list = describeDevices(CpuDescription{2, 1 << 30, {}}, &gpu);
    QCOMPARE(list.size(), std::size_t{2});
    QCOMPARE(list[0].as_object().at("id").as_string(), "cpu");
    const auto& device = list[1].as_object();
    QCOMPARE(device.at("id").as_string(), "gpu1");
    QCOMPARE(device.at("backend").as_string(), "opencl-clblast");
    QCOMPARE(device.at("max_alloc_bytes").to_number<std::uint64_t>(), std::uint64_t{35} << 30);
    QVERIFY(device.at("fp64").as_bool());
    QCOMPARE(describeDevices(CpuDescription{1, 1, {}}, nullptr).size(), std::size_t{1});
}

// PoCL's CPU device (type "cpu") is listed by OpenCL beside real GPUs: not offered as one.
void TestDeviceChoice::openClCpuIsNotAGpu() {
    OpenClDeviceInfo pocl;
    pocl.index = 0;
    pocl.platform = "Portable Computing Language";
    pocl.name = "pthread-AMD EPYC";
    pocl.vendor = "AuthenticAMD";
    pocl.type = "cpu";
    const std::vector<OpenClDeviceInfo> listed{pocl, fakeGpu()};
    const auto offered = gpuDevices(listed, OpenClCpuDevices::Hide);
    QCOMPARE(offered.size(), std::size_t{1});
    QCOMPARE(offered[0].index, 1); // the GPU keeps its id, gpu1
    QCOMPARE(offered[0].type, std::string("gpu"));
    QVERIFY(gpuDevices({pocl}, OpenClCpuDevices::Hide).empty());
    QCOMPARE(gpuDevices(listed, OpenClCpuDevices::Offer).size(), std::size_t{2});
    const std::string table = formatDeviceTable(CpuDescription{2, 1 << 30, {}}, listed);
    QVERIFY2(table.find("note: gpu0 is an OpenCL CPU device, not a GPU") != std::string::npos,
             table.c_str());
    QVERIFY2(table.find("note: gpu1") == std::string::npos, table.c_str());
}

// The desktop app reads what a child `--list-devices-tsv` printed: what it needs comes back, an
// error stays an error, and garbage is refused.
void TestDeviceChoice::deviceLinesRoundTrip() {
    OpenClDeviceInfo odd = fakeGpu();
    odd.index = 3;
    odd.name = "tab\there";
    const auto back = parseDeviceLines(formatDeviceLines(std::vector<OpenClDeviceInfo>{odd}));
    QVERIFY(back.has_value());
    QCOMPARE(back->size(), std::size_t{1});
    QCOMPARE((*back)[0].index, 3);
    QCOMPARE((*back)[0].type, std::string("gpu"));
    QCOMPARE((*back)[0].name, std::string("tab here"));
    QCOMPARE((*back)[0].vendor, std::string("NVIDIA Corporation"));
    QVERIFY(parseDeviceLines(formatDeviceLines(std::vector<OpenClDeviceInfo>{}))->empty());
    const auto failed = parseDeviceLines(
        formatDeviceLines(goblin::makeError(ErrorCode::Internal, "clGetPlatformIDs failed")));
    QVERIFY(!failed.has_value());
    QCOMPARE(failed.error().message, std::string("clGetPlatformIDs failed"));
    QVERIFY(!parseDeviceLines("").has_value());
    QVERIFY(!parseDeviceLines("ok\n1\tgpu\n").has_value());
    QVERIFY(!parseDeviceLines("ok\nx\tgpu\ta\tb\n").has_value());
    QVERIFY(!parseDeviceLines("ok\n99\tgpu\ta\tb\n").has_value());
}

QTEST_APPLESS_MAIN(TestDeviceChoice)
#include "test_device_choice.moc"
