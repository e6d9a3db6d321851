// Tests of the pure parts of GEMM calibration: parameter text, and candidates that satisfy
// CLBlast's Xgemm constraints and the device's limits. No OpenCL device needed.
#include <QtTest/QtTest>

#include "goblin/compute/gemm_calibration.hpp"

using goblin::ErrorCode;
using goblin::compute::formatGemmParameters;
using goblin::compute::GemmParameters;
using goblin::compute::OpenClDeviceInfo;
using goblin::compute::parseGemmParameters;
using goblin::compute::xgemmCandidates;
using goblin::core::DType;

namespace {

OpenClDeviceInfo device(std::uint64_t workGroup, std::uint64_t localBytes) {
    OpenClDeviceInfo info;
    info.maxWorkGroupSize = workGroup;
    info.localMemoryBytes = localBytes;
    return info;
}

std::size_t at(const GemmParameters& p, const char* name) {
    return p.at(name);
}

} // namespace

class TestGemmCalibration : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void parameterTextRoundTrips();
    void refusesBadParameterText_data();
    void refusesBadParameterText();
    void candidatesSatisfyConstraints();
    void handPickedCandidatesComeFirst();
    void smallDevicesGetFewerCandidates();
};

void TestGemmCalibration::parameterTextRoundTrips() {
    const GemmParameters parameters{{"MWG", 64}, {"NWG", 128}, {"VWM", 4}};
    const std::string text = formatGemmParameters(parameters);
    QCOMPARE(text, std::string("MWG=64 NWG=128 VWM=4"));
    auto parsed = parseGemmParameters(text);
    QVERIFY(parsed.has_value());
    QCOMPARE(*parsed, parameters);
    QVERIFY(parseGemmParameters("")->empty());
}

void TestGemmCalibration::refusesBadParameterText_data() {
    QTest::addColumn<QString>("text");
    QTest::newRow("no value") << "MWG=";
    QTest::newRow("no equals") << "MWG";
    QTest::newRow("negative") << "MWG=-1";
    QTest::newRow("lower case") << "mwg=64";
    QTest::newRow("twice") << "MWG=64 MWG=32";
    QTest::newRow("huge") << "MWG=99999999999999999999";
    QTest::newRow("junk") << "MWG=64;rm";
}

void TestGemmCalibration::refusesBadParameterText() {
    QFETCH(QString, text);
    auto parsed = parseGemmParameters(text.toStdString());
    QVERIFY(!parsed.has_value());
    QCOMPARE(parsed.error().code, ErrorCode::InvalidInput);
}

void TestGemmCalibration::candidatesSatisfyConstraints() {
    for (DType dtype : {DType::F32, DType::F64}) {
        const auto candidates = xgemmCandidates(device(1024, 32768), dtype);
        QVERIFY(candidates.size() > 50);
        for (const auto& p : candidates) {
            QCOMPARE(p.size(), std::size_t{16});
            const std::size_t threads = at(p, "MDIMC") * at(p, "NDIMC");
            QVERIFY(threads <= 1024);
            QCOMPARE(at(p, "MWG") % (at(p, "MDIMC") * at(p, "VWM")), std::size_t{0});
            QCOMPARE(at(p, "NWG") % (at(p, "NDIMC") * at(p, "VWN")), std::size_t{0});
            QCOMPARE(at(p, "MWG") % (at(p, "MDIMA") * at(p, "VWM")), std::size_t{0});
            QCOMPARE(at(p, "NWG") % (at(p, "NDIMB") * at(p, "VWN")), std::size_t{0});
            if (at(p, "GEMMK") == 0) {
                QCOMPARE(at(p, "KWG") % (threads / at(p, "MDIMA")), std::size_t{0});
                QCOMPARE(at(p, "KWG") % (threads / at(p, "NDIMB")), std::size_t{0});
                QCOMPARE(at(p, "KREG"), std::size_t{1});
            }
            const std::size_t local =
                (at(p, "SA") * at(p, "MWG") + at(p, "SB") * at(p, "NWG")) * at(p, "KWG");
            QVERIFY(local * goblin::core::itemSize(dtype) <= 32768);
        }
    }
}

void TestGemmCalibration::handPickedCandidatesComeFirst() {
    const auto candidates = xgemmCandidates(device(4096, 1 << 20), DType::F32);
    // The first lines of tuning/xgemm_candidates.txt, in order.
    QCOMPARE(at(candidates[0], "GEMMK"), std::size_t{1});
    QCOMPARE(at(candidates[0], "MWG"), std::size_t{128});
    QCOMPARE(at(candidates[1], "GEMMK"), std::size_t{0});
}

void TestGemmCalibration::smallDevicesGetFewerCandidates() {
    const auto large = xgemmCandidates(device(1024, 65536), DType::F32);
    const auto small = xgemmCandidates(device(64, 4096), DType::F32);
    QVERIFY(!small.empty());
    QVERIFY(small.size() < large.size());
    for (const auto& p : small)
        QVERIFY(at(p, "MDIMC") * at(p, "NDIMC") <= 64);
    QVERIFY(xgemmCandidates(device(0, 0), DType::F32).empty());
}

QTEST_APPLESS_MAIN(TestGemmCalibration)
#include "test_gemm_calibration.moc"
