// Tests of the pure GEMM planning: memory fit checks and time-budgeted slices.
#include <QtTest/QtTest>

#include <map>

#include "goblin/compute/gemm_slicing.hpp"

using goblin::ErrorCode;
using goblin::compute::checkGemmFits;
using goblin::compute::DeviceMemoryLimits;
using goblin::compute::GemmSlice;
using goblin::compute::planGemmSlices;
using goblin::compute::SlicePolicy;
using goblin::core::DType;

namespace {

// Every (row, depth) cell of m×k is covered by exactly one slice, and row blocks come in order.
bool coversExactly(const std::vector<GemmSlice>& slices, std::int64_t m, std::int64_t k) {
    std::map<std::pair<std::int64_t, std::int64_t>, int> cells; // (row0, k0) blocks
    std::int64_t area = 0;
    for (const auto& s : slices) {
        if (s.rows <= 0 || s.depth <= 0 || s.row0 < 0 || s.k0 < 0 || s.row0 + s.rows > m ||
            s.k0 + s.depth > k)
            return false;
        if (++cells[{s.row0, s.k0}] != 1)
            return false;
        area += s.rows * s.depth;
    }
    return area == m * k;
}

} // namespace

class TestGemmSlicing : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void smallProductIsOneSlice();
    void cutsAlongKFirst();
    void cutsRowsWhenKIsNotEnough();
    void slowDeviceGetsSmallestSlices();
    void slicesFitTheBudget_data();
    void slicesFitTheBudget();
    void emptyProductHasNoSlices();
    void fitsWithinLimits();
    void refusesOverMaxAlloc();
    void refusesOverGlobalMemory();
    void hostileShapesDoNotOverflow();
};

void TestGemmSlicing::smallProductIsOneSlice() {
    const auto slices = planGemmSlices(100, 200, 300, SlicePolicy{1e9, 0.5});
    QCOMPARE(slices.size(), std::size_t{1});
    QCOMPARE(slices[0].rows, std::int64_t{100});
    QCOMPARE(slices[0].depth, std::int64_t{200});
}

void TestGemmSlicing::cutsAlongKFirst() {
    // 2·1000·1000·1000 flops at 1 GFLOP/s with 0.5 s each: depth 250, all rows.
    const auto slices = planGemmSlices(1000, 1000, 1000, SlicePolicy{1e9, 0.5});
    QCOMPARE(slices.size(), std::size_t{4});
    for (const auto& slice : slices) {
        QCOMPARE(slice.rows, std::int64_t{1000});
        QCOMPARE(slice.depth, std::int64_t{250});
    }
    QVERIFY(coversExactly(slices, 1000, 1000));
}

void TestGemmSlicing::cutsRowsWhenKIsNotEnough() {
    // One unit of depth over all rows costs 2·4096·4096 flops; minDepth 64 → cut rows too.
    SlicePolicy policy{1e9, 0.1};
    const auto slices = planGemmSlices(4096, 1000, 4096, policy);
    QVERIFY(slices.size() > 1);
    QCOMPARE(slices[0].depth, std::int64_t{64});
    QVERIFY(slices[0].rows < 4096);
    QVERIFY(coversExactly(slices, 4096, 1000));
}

void TestGemmSlicing::slowDeviceGetsSmallestSlices() {
    SlicePolicy policy{1.0, 0.5}; // absurdly slow: every slice is the minimum
    const auto slices = planGemmSlices(130, 130, 10, policy);
    QCOMPARE(slices[0].rows, std::int64_t{64});
    QCOMPARE(slices[0].depth, std::int64_t{64});
    QCOMPARE(slices.size(), std::size_t{9}); // 3 row blocks (64, 64, 2) × 3 depth blocks
    QVERIFY(coversExactly(slices, 130, 130));
}

void TestGemmSlicing::slicesFitTheBudget_data() {
    QTest::addColumn<qint64>("m");
    QTest::addColumn<qint64>("k");
    QTest::addColumn<qint64>("n");
    QTest::addColumn<double>("gflops");
    QTest::addRow("square") << qint64{2048} << qint64{2048} << qint64{2048} << 20.0;
    QTest::addRow("odd") << qint64{1001} << qint64{777} << qint64{333} << 0.5;
    QTest::addRow("1xk kx1") << qint64{1} << qint64{100000} << qint64{1} << 0.0001;
    QTest::addRow("tall") << qint64{100000} << qint64{65} << qint64{129} << 1.0;
    QTest::addRow("fast gpu") << qint64{8192} << qint64{8192} << qint64{8192} << 20000.0;
}

void TestGemmSlicing::slicesFitTheBudget() {
    QFETCH(qint64, m);
    QFETCH(qint64, k);
    QFETCH(qint64, n);
    QFETCH(double, gflops);
    const SlicePolicy policy{gflops * 1e9, 0.5};
    const auto slices = planGemmSlices(m, k, n, policy);
    QVERIFY(coversExactly(slices, m, k));
    for (const auto& s : slices) {
        const double seconds =
            2.0 * double(s.rows) * double(s.depth) * double(n) / policy.flopsPerSecond;
        const bool minimal =
            s.rows <= std::min<qint64>(m, 64) && s.depth <= std::min<qint64>(k, 64);
        QVERIFY2(seconds <= policy.budgetSeconds || minimal,
                 qPrintable(QStringLiteral("slice of %1 s").arg(seconds)));
    }
}

void TestGemmSlicing::emptyProductHasNoSlices() {
    QVERIFY(planGemmSlices(0, 10, 10, SlicePolicy{}).empty());
    QVERIFY(planGemmSlices(10, 0, 10, SlicePolicy{}).empty());
    QVERIFY(planGemmSlices(10, 10, 0, SlicePolicy{}).empty());
}

void TestGemmSlicing::fitsWithinLimits() {
    const DeviceMemoryLimits limits{std::uint64_t{8} << 30, std::uint64_t{2} << 30};
    QVERIFY(checkGemmFits(limits, DType::F32, 4096, 4096, 4096).has_value());
    QVERIFY(checkGemmFits(limits, DType::F64, 1, 100000, 1).has_value());
}

void TestGemmSlicing::refusesOverMaxAlloc() {
    const DeviceMemoryLimits limits{std::uint64_t{64} << 30, std::uint64_t{1} << 30};
    auto fits = checkGemmFits(limits, DType::F32, 20000, 20000, 16); // A is 1.49 GiB
    QVERIFY(!fits.has_value());
    QCOMPARE(fits.error().code, ErrorCode::LimitExceeded);
    QVERIFY2(fits.error().message.find("largest allocation") != std::string::npos,
             fits.error().message.c_str());
}

void TestGemmSlicing::refusesOverGlobalMemory() {
    const DeviceMemoryLimits limits{std::uint64_t{1} << 30, std::uint64_t{1} << 30};
    // Each of A, B, C is 256 MiB: fits one allocation, but not 2·(A+B+C) in 1 GiB.
    auto fits = checkGemmFits(limits, DType::F32, 8192, 8192, 8192);
    QVERIFY(!fits.has_value());
    QCOMPARE(fits.error().code, ErrorCode::LimitExceeded);
    QVERIFY2(fits.error().message.find("device memory") != std::string::npos,
             fits.error().message.c_str());
}

void TestGemmSlicing::hostileShapesDoNotOverflow() {
    const DeviceMemoryLimits limits{std::uint64_t{80} << 30, std::uint64_t{20} << 30};
    const std::int64_t huge = std::int64_t{1} << 40;
    auto fits = checkGemmFits(limits, DType::F64, huge, huge, huge);
    QVERIFY(!fits.has_value());
    QCOMPARE(fits.error().code, ErrorCode::LimitExceeded);
}

QTEST_APPLESS_MAIN(TestGemmSlicing)
#include "test_gemm_slicing.moc"
