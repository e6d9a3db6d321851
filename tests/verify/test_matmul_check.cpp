// Tests of the matmul tile check: honest products pass at every shape, corrupted ones never do.
#include <QtTest/QtTest>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "goblin/core/cpu_clones.hpp"
#include "goblin/core/random_source.hpp"
#include "goblin/verify/matmul_check.hpp"
#include "support/matmul_shapes.hpp"
#include "support/random_tensors.hpp"

using goblin::core::DType;
using goblin::core::MatrixView;
using goblin::core::SeededRandom;
using goblin::core::Tensor;
using goblin::verify::checkMatmulTile;
using goblin::verify::checkMatmulTileExactly;
using goblin::verify::checkMatmulTileWithProbe;
using goblin::verify::ColumnProbe;
using goblin::verify::gamma;
using goblin::verify::MatmulCheckOptions;
using goblin::verify::probeColumns;
using goblin::verify::unitRoundoff;
using goblin::verify::Verdict;

namespace {

constexpr double kF64Roundoff = 0x1p-53;

// Magnitudes in [0.1, 2): cancellation makes |C| much smaller than |A||B|.
Tensor randomMatrix(DType dtype, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
    return goblin::testing::randomTensor(dtype, {rows, cols}, seed, {0.1, 2.0});
}

// The honest product, rounded the way a volunteer would: accumulated in T by a plain loop.
template <class T> Tensor honestProductOf(const MatrixView& a, const MatrixView& b) {
    Tensor c = Tensor::allocate(a.dtype, {a.rows, b.cols}).value();
    auto out = c.values<T>();
    for (std::int64_t i = 0; i < a.rows; ++i) {
        for (std::int64_t j = 0; j < b.cols; ++j) {
            T sum = 0;
            for (std::int64_t p = 0; p < a.cols; ++p)
                sum += a.row<T>(i)[p] * b.row<T>(p)[j];
            out[static_cast<std::size_t>(i * b.cols + j)] = sum;
        }
    }
    return c;
}

Tensor honestProduct(const MatrixView& a, const MatrixView& b) {
    return a.dtype == DType::F32 ? honestProductOf<float>(a, b) : honestProductOf<double>(a, b);
}

double elementAt(const Tensor& t, std::int64_t index) {
    const auto at = static_cast<std::size_t>(index);
    return t.dtype() == DType::F32 ? static_cast<double>(t.values<float>()[at])
                                   : t.values<double>()[at];
}

void setElement(Tensor& t, std::int64_t index, double value) {
    const auto at = static_cast<std::size_t>(index);
    if (t.dtype() == DType::F32)
        t.values<float>()[at] = static_cast<float>(value);
    else
        t.values<double>()[at] = value;
}

// An upper bound on the check's bound for row i whatever r is (|r| < 1), so an error of a few
// times this is clearly above the bound.
double rowBoundCeiling(const Tensor& a, const Tensor& b, const Tensor& c, std::int64_t i) {
    const std::int64_t k = a.shape()[1];
    const std::int64_t n = b.shape()[1];
    double abSum = 0.0;
    double cSum = 0.0;
    for (std::int64_t j = 0; j < n; ++j) {
        for (std::int64_t p = 0; p < k; ++p)
            abSum += std::fabs(elementAt(a, i * k + p)) * std::fabs(elementAt(b, p * n + j));
        cSum += std::fabs(elementAt(c, i * n + j));
    }
    const double u = unitRoundoff(a.dtype());
    return (gamma(k, u) + gamma(k + 2, kF64Roundoff)) * abSum + gamma(n + 1, kF64Roundoff) * cSum;
}

enum class Inputs { Mixed, Positive, Scaled };

// A (m×k) and B (k×n): mixed signs in [0.1, 2), or positive (rounding errors do not cancel), or
// mixed signs with rows of A, the inner dimension and columns of B scaled by 10^U(-3, 3), so
// magnitudes mix over 10⁶ (12 decades in |A||B|).
std::pair<Tensor, Tensor> inputsOf(DType dtype, std::int64_t m, std::int64_t k, std::int64_t n,
                                   Inputs kind, std::uint64_t seed) {
    Tensor a = randomMatrix(dtype, m, k, seed);
    Tensor b = randomMatrix(dtype, k, n, seed + 1);
    std::mt19937_64 engine(seed + 2);
    std::uniform_real_distribution<double> decades(-3.0, 3.0);
    const auto scales = [&](std::int64_t count) {
        std::vector<double> out(static_cast<std::size_t>(count), 1.0);
        if (kind == Inputs::Scaled)
            for (double& scale : out)
                scale = std::pow(10.0, decades(engine));
        return out;
    };
    const auto rows = scales(m), inner = scales(k), columns = scales(n);
    for (std::int64_t i = 0; i < m * k; ++i) {
        const double value = elementAt(a, i) * rows[static_cast<std::size_t>(i / k)] *
                             inner[static_cast<std::size_t>(i % k)];
        setElement(a, i, kind == Inputs::Positive ? std::fabs(value) : value);
    }
    for (std::int64_t i = 0; i < k * n; ++i) {
        const double value = elementAt(b, i) * columns[static_cast<std::size_t>(i % n)];
        setElement(b, i, kind == Inputs::Positive ? std::fabs(value) : value);
    }
    return {std::move(a), std::move(b)};
}

// An element's own bound γ_K·(|A||B|)_ij.
double elementBound(const Tensor& a, const Tensor& b, std::int64_t i, std::int64_t j) {
    const std::int64_t k = a.shape()[1];
    const std::int64_t n = b.shape()[1];
    double sum = 0.0;
    for (std::int64_t p = 0; p < k; ++p)
        sum += std::fabs(elementAt(a, i * k + p)) * std::fabs(elementAt(b, p * n + j));
    return gamma(k, unitRoundoff(a.dtype())) * sum;
}

// (A·B)_ij in long double (64-bit significand): within k·2⁻⁶⁴·(|A||B|)_ij of the exact product,
// 2⁻¹¹ of an f64 element's bound and far less of an f32 one's.
long double exactElement(const Tensor& a, const Tensor& b, std::int64_t i, std::int64_t j) {
    const std::int64_t k = a.shape()[1];
    const std::int64_t n = b.shape()[1];
    long double sum = 0.0L;
    for (std::int64_t p = 0; p < k; ++p)
        sum += static_cast<long double>(elementAt(a, i * k + p)) * elementAt(b, p * n + j);
    return sum;
}

// C's element at `index` set to truth + sign·error in the tile's dtype, stepped out by ulps until
// it is at least `error` from truth (rounding to the dtype may land it closer).
void setOffBy(Tensor& c, std::int64_t index, long double truth, double sign, double error) {
    setElement(c, index, static_cast<double>(truth + sign * static_cast<long double>(error)));
    while (std::fabs(static_cast<long double>(elementAt(c, index)) - truth) < error)
        setElement(c, index,
                   c.dtype() == DType::F32
                       ? static_cast<double>(std::nextafter(
                             static_cast<float>(elementAt(c, index)),
                             static_cast<float>(sign * std::numeric_limits<float>::infinity())))
                       : std::nextafter(elementAt(c, index),
                                        sign * std::numeric_limits<double>::infinity()));
}

void addShapeRows(std::initializer_list<DType> dtypes = {DType::F32, DType::F64}) {
    QTest::addColumn<DType>("dtype");
    QTest::addColumn<qint64>("m");
    QTest::addColumn<qint64>("k");
    QTest::addColumn<qint64>("n");
    QTest::addColumn<int>("inputs");
    const struct {
        const char* name;
        qint64 m, k, n;
    } shapes[] = {{"1x1x1", 1, 1, 1},
                  {"3x5x7", 3, 5, 7},
                  {"tall-skinny 900x64x3", 900, 64, 3},
                  {"short-wide 3x64x900", 3, 64, 900},
                  {"awkward 37x129x61", 37, 129, 61},
                  {"1x2048x1", 1, 2048, 1},
                  {"wide 20x777x600", 20, 777, 600},
                  {"K 2048 64x2048x80", 64, 2048, 80}};
    const char* kinds[] = {"mixed", "positive", "scaled 1e±3"};
    for (DType dtype : dtypes)
        for (const auto& shape : shapes)
            for (int kind = 0; kind < 3; ++kind)
                QTest::addRow("%s %s %s", dtype == DType::F32 ? "f32" : "f64", shape.name,
                              kinds[kind])
                    << dtype << shape.m << shape.k << shape.n << kind;
}

// The check with vectors from a seeded source, so every run is the same.
goblin::verify::MatmulCheckReport check(const MatrixView& a, const MatrixView& b,
                                        const MatrixView& c, MatmulCheckOptions options = {},
                                        std::uint64_t seed = 0) {
    SeededRandom random(seed);
    return checkMatmulTile(a, b, c, options, random);
}

} // namespace

class TestMatmulCheck : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void gammaValues();
    void honestProductsPass_data();
    void honestProductsPass();
    void stridedSubViewsPass();
    void emptyAndZeroInnerTiles();
    void corruptedElementIsAlwaysRejected_data();
    void corruptedElementIsAlwaysRejected();
    void nonFiniteValuesAreRejected_data();
    void nonFiniteValuesAreRejected();
    void nonFiniteInputsAreRejected();
    void nonFiniteNextToZerosIsRejected();
    void nonFiniteInputOfEmptyProductIsRejected();
    void dtypeMismatchIsRejected();
    void unsupportedDtypeIsRejected();
    void shapeMismatchIsRejected();
    void findNonFiniteReportsFirstPosition();
    void sharedColumnProbeChecksEveryRowBlock();
    void elementOffByTwiceItsBoundIsNeverAccepted_data();
    void elementOffByTwiceItsBoundIsNeverAccepted();
    void honestTilesAreNeverRejected_data();
    void honestTilesAreNeverRejected();
    void f64ElementOffByTwiceItsBoundIsCaught_data();
    void f64ElementOffByTwiceItsBoundIsCaught();
    void honestF64CancellingRowsAreAccepted();
    void scaledRowIsCaught();
    void exactCheckDecidesPerElement();
    void exactCheckGates();
    void vectorsComeFromTheSource();
    void sumsAgreeWithAndWithoutAvx512();
    void cleanup() { goblin::core::avx512Allowed() = true; }
};

void TestMatmulCheck::gammaValues() {
    const double u = 0x1p-24;
    QVERIFY(gamma(1000, u) == 1000 * u / (1 - 1000 * u));
    QVERIFY(gamma(0, u) == 0.0);
    QVERIFY(gamma(1, kF64Roundoff) == kF64Roundoff / (1 - kF64Roundoff));
    QVERIFY(std::isinf(gamma(std::int64_t{1} << 24, u)));
    QVERIFY(std::isinf(gamma((std::int64_t{1} << 24) + 1, u)));
    QVERIFY(std::isfinite(gamma((std::int64_t{1} << 24) - 1, u)));
    QCOMPARE(unitRoundoff(DType::F32), 0x1p-24);
    QCOMPARE(unitRoundoff(DType::F64), 0x1p-53);
}

void TestMatmulCheck::honestProductsPass_data() {
    goblin::testing::addMatmulRows({
        {"1x1·1x1", 1, 1, 1},
        {"1xk·kx1", 1, 300, 1},
        {"kx1·1xk", 40, 1, 37},
        {"non-square", 17, 33, 9},
        {"square", 64, 64, 64},
        {"large K", 64, 2048, 64},
    });
}

void TestMatmulCheck::honestProductsPass() {
    QFETCH(DType, dtype);
    QFETCH(qint64, m);
    QFETCH(qint64, k);
    QFETCH(qint64, n);
    const Tensor a = randomMatrix(dtype, m, k, 1);
    const Tensor b = randomMatrix(dtype, k, n, 2);
    const Tensor c = honestProduct(viewOf(a), viewOf(b));
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
        // Odd counts and counts under the minimum of 2 take the same path.
        const int vectors = std::array{2, 3, 7, 0, -1}[seed];
        const auto report = check(viewOf(a), viewOf(b), viewOf(c), {vectors}, seed);
        QVERIFY2(report.verdict == Verdict::Accepted, report.reason.c_str());
        QVERIFY(report.reason.empty());
        QVERIFY(report.boundRatio < 1.0);
        QVERIFY(report.maxErrorRatio >= 0.0);
        QVERIFY(report.residual <= report.bound);
        QCOMPARE(report.threshold, MatmulCheckOptions{}.threshold);
    }
}

void TestMatmulCheck::stridedSubViewsPass() {
    for (DType dtype : {DType::F32, DType::F64}) {
        const Tensor bigA = randomMatrix(dtype, 30, 50, 3);
        const Tensor bigB = randomMatrix(dtype, 60, 40, 4);
        const MatrixView a = subView(viewOf(bigA), 3, 20, 5, 31);
        const MatrixView b = subView(viewOf(bigB), 7, 31, 2, 25);
        QVERIFY(a.rowStride > a.cols && b.rowStride > b.cols);
        // C sits inside a larger buffer too, with garbage (even NaN) outside the view.
        Tensor bigC = Tensor::allocate(dtype, {25, 40}).value();
        for (std::int64_t i = 0; i < 25 * 40; ++i)
            setElement(bigC, i, std::numeric_limits<double>::quiet_NaN());
        const Tensor product = honestProduct(a, b);
        for (std::int64_t i = 0; i < 20; ++i) {
            for (std::int64_t j = 0; j < 25; ++j)
                setElement(bigC, (i + 2) * 40 + j + 10, elementAt(product, i * 25 + j));
        }
        const MatrixView c = subView(viewOf(bigC), 2, 20, 10, 25);
        const auto report = check(a, b, c);
        QVERIFY2(report.verdict == Verdict::Accepted, report.reason.c_str());
        QVERIFY(report.boundRatio < 1.0);
        // A subtly wrong view of the same data (shifted a column) is rejected.
        const MatrixView shifted = subView(viewOf(bigC), 2, 20, 9, 25);
        for (std::int64_t i = 2; i < 22; ++i)
            setElement(bigC, i * 40 + 9, 1.0);
        QCOMPARE(check(a, b, shifted).verdict, Verdict::Rejected);
    }
}

void TestMatmulCheck::emptyAndZeroInnerTiles() {
    const Tensor a = Tensor::allocate(DType::F32, {3, 0}).value();
    const Tensor b = Tensor::allocate(DType::F32, {0, 4}).value();
    Tensor c = Tensor::allocate(DType::F32, {3, 4}).value();
    std::memset(c.bytes().data(), 0, c.byteSize());
    auto report = check(viewOf(a), viewOf(b), viewOf(c));
    QVERIFY2(report.verdict == Verdict::Accepted, report.reason.c_str());
    QCOMPARE(report.maxErrorRatio, 0.0);
    setElement(c, 5, 1.0);
    QCOMPARE(check(viewOf(a), viewOf(b), viewOf(c)).verdict, Verdict::Rejected);

    const Tensor empty = Tensor::allocate(DType::F32, {0, 4}).value();
    const Tensor bk = randomMatrix(DType::F32, 4, 2, 5);
    const Tensor emptyC = Tensor::allocate(DType::F32, {0, 2}).value();
    report = check(viewOf(empty), viewOf(bk), viewOf(emptyC));
    QCOMPARE(report.verdict, Verdict::Accepted);
}

void TestMatmulCheck::corruptedElementIsAlwaysRejected_data() {
    QTest::addColumn<DType>("dtype");
    QTest::newRow("f32") << DType::F32;
    QTest::newRow("f64") << DType::F64;
}

void TestMatmulCheck::corruptedElementIsAlwaysRejected() {
    QFETCH(DType, dtype);
    const std::int64_t m = 23;
    const std::int64_t k = 40;
    const std::int64_t n = 19;
    const Tensor a = randomMatrix(dtype, m, k, 6);
    const Tensor b = randomMatrix(dtype, k, n, 7);
    const Tensor honest = honestProduct(viewOf(a), viewOf(b));
    std::mt19937_64 positions(8);
    std::uniform_int_distribution<std::int64_t> pick(0, m * n - 1);
    for (int trial = 0; trial < 50; ++trial) {
        const std::int64_t index = pick(positions);
        Tensor c = honestProduct(viewOf(a), viewOf(b));
        // |r_j| ≥ 0.5 and the bound stays below the ceiling whatever r is, so the residual from
        // 8× the ceiling is at least 4× minus the honest part (≤ 1×): always well over the bound.
        const double error = 8.0 * rowBoundCeiling(a, b, honest, index / n);
        setElement(c, index, elementAt(c, index) + (trial % 2 == 0 ? error : -error));
        for (std::uint64_t seed = 0; seed < 50; ++seed) {
            const int vectors = seed % 5 == 4 ? 3 : 2;
            const auto report = check(viewOf(a), viewOf(b), viewOf(c), {vectors}, seed);
            if (report.verdict != Verdict::Rejected)
                QFAIL(qPrintable(
                    QStringLiteral("corruption at %1 accepted with seed %2").arg(index).arg(seed)));
            QVERIFY(report.boundRatio > 1.0);
            QVERIFY(!report.reason.empty());
        }
    }
}

void TestMatmulCheck::nonFiniteValuesAreRejected_data() {
    QTest::addColumn<DType>("dtype");
    QTest::addColumn<double>("value");
    for (DType dtype : {DType::F32, DType::F64}) {
        const char* name = dtype == DType::F32 ? "f32" : "f64";
        QTest::addRow("%s NaN", name) << dtype << std::numeric_limits<double>::quiet_NaN();
        QTest::addRow("%s +Inf", name) << dtype << std::numeric_limits<double>::infinity();
        QTest::addRow("%s -Inf", name) << dtype << -std::numeric_limits<double>::infinity();
    }
}

void TestMatmulCheck::nonFiniteValuesAreRejected() {
    QFETCH(DType, dtype);
    QFETCH(double, value);
    const Tensor a = randomMatrix(dtype, 5, 6, 9);
    const Tensor b = randomMatrix(dtype, 6, 7, 10);
    Tensor c = honestProduct(viewOf(a), viewOf(b));
    setElement(c, 3 * 7 + 4, value);
    setElement(c, 4 * 7 + 1, value);
    const auto report = check(viewOf(a), viewOf(b), viewOf(c));
    QCOMPARE(report.verdict, Verdict::Rejected);
    QVERIFY2(report.reason.find("non-finite") != std::string::npos, report.reason.c_str());
    QVERIFY2(report.reason.find("(3, 4)") != std::string::npos, report.reason.c_str());
}

void TestMatmulCheck::nonFiniteInputsAreRejected() {
    Tensor a = randomMatrix(DType::F32, 5, 6, 11);
    Tensor b = randomMatrix(DType::F32, 6, 7, 12);
    const Tensor c = honestProduct(viewOf(a), viewOf(b));
    setElement(a, 2 * 6 + 5, std::numeric_limits<double>::quiet_NaN());
    auto report = check(viewOf(a), viewOf(b), viewOf(c));
    QCOMPARE(report.verdict, Verdict::Rejected);
    QVERIFY2(report.reason.find("a holds a non-finite value at (2, 5)") != std::string::npos,
             report.reason.c_str());
    setElement(a, 2 * 6 + 5, 1.0);
    setElement(b, 1 * 7 + 0, std::numeric_limits<double>::infinity());
    report = check(viewOf(a), viewOf(b), viewOf(c));
    QCOMPARE(report.verdict, Verdict::Rejected);
    QVERIFY2(report.reason.find("b holds a non-finite value at (1, 0)") != std::string::npos,
             report.reason.c_str());
}

void TestMatmulCheck::nonFiniteNextToZerosIsRejected() {
    // Inf in A meets an all-zero row of B, NaN in B meets an all-zero column of A: C stays exact.
    for (DType dtype : {DType::F32, DType::F64}) {
        Tensor a = randomMatrix(dtype, 4, 5, 24);
        Tensor b = randomMatrix(dtype, 5, 3, 25);
        for (std::int64_t j = 0; j < 3; ++j)
            setElement(b, 2 * 3 + j, 0.0);
        for (std::int64_t i = 0; i < 4; ++i)
            setElement(a, i * 5 + 4, 0.0);
        const Tensor c = honestProduct(viewOf(a), viewOf(b));
        QCOMPARE(check(viewOf(a), viewOf(b), viewOf(c)).verdict, Verdict::Accepted);
        setElement(a, 1 * 5 + 2, std::numeric_limits<double>::infinity());
        auto report = check(viewOf(a), viewOf(b), viewOf(c));
        QCOMPARE(report.verdict, Verdict::Rejected);
        QVERIFY2(report.reason.find("a holds a non-finite value at (1, 2)") != std::string::npos,
                 report.reason.c_str());
        setElement(a, 1 * 5 + 2, 1.0);
        setElement(b, 4 * 3 + 1, std::numeric_limits<double>::quiet_NaN());
        report = check(viewOf(a), viewOf(b), viewOf(c));
        QCOMPARE(report.verdict, Verdict::Rejected);
        QVERIFY2(report.reason.find("b holds a non-finite value at (4, 1)") != std::string::npos,
                 report.reason.c_str());
    }
}

void TestMatmulCheck::nonFiniteInputOfEmptyProductIsRejected() {
    Tensor a = randomMatrix(DType::F32, 3, 4, 26);
    const Tensor b = Tensor::allocate(DType::F32, {4, 0}).value();
    const Tensor c = Tensor::allocate(DType::F32, {3, 0}).value();
    QCOMPARE(check(viewOf(a), viewOf(b), viewOf(c)).verdict, Verdict::Accepted);
    setElement(a, 7, std::numeric_limits<double>::quiet_NaN());
    const auto report = check(viewOf(a), viewOf(b), viewOf(c));
    QCOMPARE(report.verdict, Verdict::Rejected);
    QVERIFY2(report.reason.find("a holds a non-finite value at (1, 3)") != std::string::npos,
             report.reason.c_str());
}

void TestMatmulCheck::dtypeMismatchIsRejected() {
    const Tensor a = randomMatrix(DType::F32, 3, 4, 13);
    const Tensor b = randomMatrix(DType::F64, 4, 5, 14);
    const Tensor c = randomMatrix(DType::F32, 3, 5, 15);
    const auto report = check(viewOf(a), viewOf(b), viewOf(c));
    QCOMPARE(report.verdict, Verdict::Rejected);
    QVERIFY2(report.reason.find("dtype") != std::string::npos, report.reason.c_str());
    const Tensor c64 = randomMatrix(DType::F64, 3, 5, 16);
    const Tensor a64 = randomMatrix(DType::F64, 3, 4, 17);
    QCOMPARE(check(viewOf(a64), viewOf(b), viewOf(c)).verdict, Verdict::Rejected);
    QCOMPARE(check(viewOf(a64), viewOf(b), viewOf(c64)).verdict,
             Verdict::Rejected); // c64 is random, not the product: rejected by Freivalds
}

void TestMatmulCheck::unsupportedDtypeIsRejected() {
    Tensor a = Tensor::allocate(DType::I32, {2, 2}).value();
    Tensor b = Tensor::allocate(DType::I32, {2, 2}).value();
    Tensor c = Tensor::allocate(DType::I32, {2, 2}).value();
    for (Tensor* t : {&a, &b, &c})
        std::memset(t->bytes().data(), 0, t->byteSize());
    const auto report = check(viewOf(a), viewOf(b), viewOf(c));
    QCOMPARE(report.verdict, Verdict::Rejected);
    QVERIFY2(report.reason.find("i32") != std::string::npos, report.reason.c_str());
}

void TestMatmulCheck::shapeMismatchIsRejected() {
    const Tensor a = randomMatrix(DType::F32, 3, 4, 18);
    const Tensor b = randomMatrix(DType::F32, 5, 6, 19);
    const Tensor c = randomMatrix(DType::F32, 3, 6, 20);
    auto report = check(viewOf(a), viewOf(b), viewOf(c));
    QCOMPARE(report.verdict, Verdict::Rejected);
    QVERIFY2(report.reason.find("3x4") != std::string::npos, report.reason.c_str());
    QVERIFY2(report.reason.find("5x6") != std::string::npos, report.reason.c_str());

    const Tensor b2 = randomMatrix(DType::F32, 4, 6, 21);
    const Tensor wrongC = randomMatrix(DType::F32, 6, 3, 22);
    report = check(viewOf(a), viewOf(b2), viewOf(wrongC));
    QCOMPARE(report.verdict, Verdict::Rejected);
    QVERIFY2(report.reason.find("6x3") != std::string::npos, report.reason.c_str());
}

void TestMatmulCheck::findNonFiniteReportsFirstPosition() {
    Tensor t = randomMatrix(DType::F64, 4, 4, 23);
    QVERIFY(!goblin::verify::findNonFinite(viewOf(t)));
    setElement(t, 2 * 4 + 3, std::numeric_limits<double>::infinity());
    setElement(t, 3 * 4 + 0, std::numeric_limits<double>::quiet_NaN());
    const auto at = goblin::verify::findNonFinite(viewOf(t));
    QVERIFY(at.has_value());
    QCOMPARE(at->first, std::int64_t{2});
    QCOMPARE(at->second, std::int64_t{3});
}

// One probe of a column block of B serves every row block of A: honest tiles pass, a tile with
// one corrupted element fails, and the verdicts agree with the stand-alone check.
void TestMatmulCheck::sharedColumnProbeChecksEveryRowBlock() {
    for (DType dtype : {DType::F32, DType::F64}) {
        const Tensor a = randomMatrix(dtype, 40, 70, 11);
        const Tensor b = randomMatrix(dtype, 70, 50, 12);
        const MatrixView columns = subView(viewOf(b), 0, 70, 20, 30);
        SeededRandom probeRandom(99);
        const ColumnProbe probe = probeColumns(columns, {2}, probeRandom);
        QCOMPARE(probe.k, std::int64_t{70});
        QCOMPARE(probe.n, std::int64_t{30});
        for (std::int64_t row0 : {0, 16, 32}) {
            const std::int64_t rows = std::min<std::int64_t>(16, 40 - row0);
            const MatrixView rowsOfA = subView(viewOf(a), row0, rows, 0, 70);
            Tensor tile = honestProduct(rowsOfA, columns);
            auto shared = checkMatmulTileWithProbe(rowsOfA, columns, viewOf(tile), probe);
            QVERIFY2(shared.verdict == Verdict::Accepted, shared.reason.c_str());
            QCOMPARE(check(rowsOfA, columns, viewOf(tile), {2}, 5).verdict, Verdict::Accepted);
            setElement(tile, rows * 30 / 2, elementAt(tile, rows * 30 / 2) + 1.0);
            shared = checkMatmulTileWithProbe(rowsOfA, columns, viewOf(tile), probe);
            QCOMPARE(shared.verdict, Verdict::Rejected);
            QVERIFY(shared.boundRatio > 1.0);
        }
    }
}

void TestMatmulCheck::elementOffByTwiceItsBoundIsNeverAccepted_data() {
    // f64 tiles too: their check sums are compensated, so its own rounding is negligible.
    addShapeRows();
}

// One element off by 2.05× its own bound γ_K·(|A||B|)_ij, anywhere, with any vectors: the
// Freivalds check never accepts it (it rejects it or escalates it), and the exact check rejects
// every escalated one.
void TestMatmulCheck::elementOffByTwiceItsBoundIsNeverAccepted() {
    QFETCH(DType, dtype);
    QFETCH(qint64, m);
    QFETCH(qint64, k);
    QFETCH(qint64, n);
    QFETCH(int, inputs);
    const auto [a, b] = inputsOf(dtype, m, k, n, static_cast<Inputs>(inputs), 40);
    std::mt19937_64 positions(41);
    int escalated = 0;
    for (int trial = 0; trial < 12; ++trial) {
        const auto index =
            static_cast<std::int64_t>(positions() % static_cast<std::uint64_t>(m * n));
        // Off by 2.05× from the exact product (an honest element may already be off by up to 1×).
        const double error = 2.05 * elementBound(a, b, index / n, index % n);
        const long double truth = exactElement(a, b, index / n, index % n);
        Tensor c = honestProduct(viewOf(a), viewOf(b));
        setOffBy(c, index, truth, trial % 2 == 0 ? 1.0 : -1.0, error);
        QVERIFY(std::fabs(static_cast<long double>(elementAt(c, index)) - truth) >= error);
        bool exactDone = false;
        for (std::uint64_t seed = 0; seed < 16; ++seed) {
            const auto report = check(viewOf(a), viewOf(b), viewOf(c), {}, seed * 31 + 7);
            if (report.verdict == Verdict::Accepted)
                QFAIL(qPrintable(QStringLiteral("element %1 off by 2.05x its bound accepted with "
                                                "seed %2 (estimated ratio %3)")
                                     .arg(index)
                                     .arg(seed)
                                     .arg(report.maxErrorRatio)));
            QVERIFY(!report.reason.empty());
            if (report.verdict != Verdict::Escalate || exactDone)
                continue;
            ++escalated;
            exactDone = true;
            const auto exact = checkMatmulTileExactly(viewOf(a), viewOf(b), viewOf(c));
            QCOMPARE(exact.verdict, Verdict::Rejected);
            QCOMPARE(exact.worstRow, index / n);
            QCOMPARE(exact.worstColumn, index % n);
            QVERIFY(exact.maxErrorRatio > 1.9 && exact.maxErrorRatio < 2.2);
        }
    }
    qDebug("%d of 12 corrupted tiles escalated at least once", escalated);
}

void TestMatmulCheck::honestTilesAreNeverRejected_data() {
    addShapeRows();
}

// Honest products (plain loops in the tile's dtype: the worst rounding of any honest backend) are
// never rejected, and the exact check accepts every one.
void TestMatmulCheck::honestTilesAreNeverRejected() {
    QFETCH(DType, dtype);
    QFETCH(qint64, m);
    QFETCH(qint64, k);
    QFETCH(qint64, n);
    QFETCH(int, inputs);
    const auto [a, b] = inputsOf(dtype, m, k, n, static_cast<Inputs>(inputs), 50);
    const Tensor c = honestProduct(viewOf(a), viewOf(b));
    for (std::uint64_t seed = 0; seed < 40; ++seed) {
        const auto report = check(viewOf(a), viewOf(b), viewOf(c), {}, seed);
        QVERIFY2(report.verdict != Verdict::Rejected, report.reason.c_str());
        QVERIFY(report.boundRatio <= 1.0);
    }
    const auto exact = checkMatmulTileExactly(viewOf(a), viewOf(b), viewOf(c));
    QVERIFY2(exact.verdict == Verdict::Accepted, exact.reason.c_str());
    QVERIFY(exact.maxErrorRatio < 1.0);
    QVERIFY(exact.reason.empty());
}

void TestMatmulCheck::f64ElementOffByTwiceItsBoundIsCaught_data() {
    QTest::addColumn<qint64>("m");
    QTest::addColumn<qint64>("k");
    QTest::addColumn<qint64>("n");
    QTest::addColumn<int>("inputs");
    const struct {
        const char* name;
        qint64 m, k, n;
    } shapes[] = {{"wide 16x1024x700", 16, 1024, 700},
                  {"tall-skinny 2000x64x3", 2000, 64, 3},
                  {"tall-skinny 600x300x2", 600, 300, 2}};
    for (const auto& shape : shapes)
        for (int kind : {0, 2})
            QTest::addRow("%s %s", shape.name, kind == 0 ? "mixed" : "scaled 1e±3")
                << shape.m << shape.k << shape.n << kind;
}

// f64 tiles, whose check sums are compensated: one element off by 2.05× its own bound, at places
// and with vectors drawn from SeededRandom, is never accepted by the Freivalds check; every tile it
// escalates the exact check rejects, naming the element. (With plain float64 sums the check's own
// rounding, ≈ w element bounds, let such an element pass: docs/verification.md.)
void TestMatmulCheck::f64ElementOffByTwiceItsBoundIsCaught() {
    QFETCH(qint64, m);
    QFETCH(qint64, k);
    QFETCH(qint64, n);
    QFETCH(int, inputs);
    const auto [a, b] = inputsOf(DType::F64, m, k, n, static_cast<Inputs>(inputs), 140);
    const Tensor honest = honestProduct(viewOf(a), viewOf(b));
    SeededRandom places(141);
    int escalated = 0, rejected = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const auto index =
            static_cast<std::int64_t>(places.next64() % static_cast<std::uint64_t>(m * n));
        const double error = 2.05 * elementBound(a, b, index / n, index % n);
        const long double truth = exactElement(a, b, index / n, index % n);
        Tensor c = honestProduct(viewOf(a), viewOf(b));
        setOffBy(c, index, truth, places.chance(0.5) ? 1.0 : -1.0, error);
        bool exactDone = false;
        for (std::uint64_t seed = 0; seed < 12; ++seed) {
            const auto report = check(viewOf(a), viewOf(b), viewOf(c), {}, 1000 + seed * 97);
            if (report.verdict == Verdict::Accepted)
                QFAIL(qPrintable(QStringLiteral("f64 element %1 off by 2.05x its bound accepted "
                                                "with seed %2 (estimated ratio %3)")
                                     .arg(index)
                                     .arg(seed)
                                     .arg(report.maxErrorRatio)));
            QCOMPARE(report.worstRow, index / n);
            rejected += report.verdict == Verdict::Rejected ? 1 : 0;
            if (report.verdict != Verdict::Escalate || exactDone)
                continue;
            ++escalated;
            exactDone = true;
            const auto exact = checkMatmulTileExactly(viewOf(a), viewOf(b), viewOf(c));
            QCOMPARE(exact.verdict, Verdict::Rejected);
            QCOMPARE(exact.worstRow, index / n);
            QCOMPARE(exact.worstColumn, index % n);
            QVERIFY(exact.maxErrorRatio > 2.0 && exact.maxErrorRatio < 2.2);
        }
    }
    QVERIFY(escalated + rejected > 0);
    // The same tiles, honest, pass: the check is not simply refusing f64 tiles.
    for (std::uint64_t seed = 0; seed < 12; ++seed) {
        const auto report = check(viewOf(a), viewOf(b), viewOf(honest), {}, 1000 + seed * 97);
        QVERIFY2(report.verdict == Verdict::Accepted, report.reason.c_str());
    }
}

// Cancellation-heavy f64 rows: A's columns come in equal pairs and B's rows in pairs (y, −y·(1 +
// 10⁻³·t)), so |C| ≈ 10⁻³·|A||B| and every honest rounding is large beside C. Honest products, by
// a plain loop and in reverse order, are never rejected, never escalated at these sizes, and the
// exact check accepts them.
void TestMatmulCheck::honestF64CancellingRowsAreAccepted() {
    for (const auto& [m, k, n] :
         {std::array<std::int64_t, 3>{40, 512, 64}, std::array<std::int64_t, 3>{300, 128, 3},
          std::array<std::int64_t, 3>{5, 2048, 200}}) {
        Tensor a = randomMatrix(DType::F64, m, k, 150);
        Tensor b = randomMatrix(DType::F64, k, n, 151);
        SeededRandom tweaks(152);
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t p = 1; p < k; p += 2)
                setElement(a, i * k + p, elementAt(a, i * k + p - 1));
        for (std::int64_t p = 1; p < k; p += 2)
            for (std::int64_t j = 0; j < n; ++j)
                setElement(b, p * n + j,
                           -elementAt(b, (p - 1) * n + j) *
                               (1.0 + 1e-3 * (2.0 * tweaks.uniform01() - 1.0)));
        const Tensor forward = honestProduct(viewOf(a), viewOf(b));
        Tensor reverse = Tensor::allocate(DType::F64, {m, n}).value();
        double cSum = 0.0, abSum = 0.0;
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
                double sum = 0.0, magnitude = 0.0;
                for (std::int64_t p = k - 1; p >= 0; --p) {
                    sum += elementAt(a, i * k + p) * elementAt(b, p * n + j);
                    magnitude += std::fabs(elementAt(a, i * k + p) * elementAt(b, p * n + j));
                }
                setElement(reverse, i * n + j, sum);
                cSum += std::fabs(sum);
                abSum += magnitude;
            }
        QVERIFY(cSum < 1e-2 * abSum); // the rows do cancel
        for (const Tensor* c : {&forward, static_cast<const Tensor*>(&reverse)}) {
            for (std::uint64_t seed = 0; seed < 20; ++seed) {
                const auto report = check(viewOf(a), viewOf(b), viewOf(*c), {}, seed);
                QVERIFY2(report.verdict == Verdict::Accepted, report.reason.c_str());
                QVERIFY(report.boundRatio < 1.0);
            }
            const auto exact = checkMatmulTileExactly(viewOf(a), viewOf(b), viewOf(*c));
            QVERIFY2(exact.verdict == Verdict::Accepted, exact.reason.c_str());
            QVERIFY(exact.maxErrorRatio < 1.0);
        }
    }
}

// The lie: a row of a wide f32 tile scaled by 1.001.
void TestMatmulCheck::scaledRowIsCaught() {
    const auto [a, b] = inputsOf(DType::F32, 50, 777, 600, Inputs::Mixed, 60);
    for (std::int64_t row : {0, 17, 49}) {
        Tensor c = honestProduct(viewOf(a), viewOf(b));
        for (std::int64_t j = 0; j < 600; ++j)
            setElement(c, row * 600 + j, elementAt(c, row * 600 + j) * 1.001);
        for (std::uint64_t seed = 0; seed < 10; ++seed) {
            const auto report = check(viewOf(a), viewOf(b), viewOf(c), {}, seed);
            QVERIFY(report.verdict != Verdict::Accepted);
            QCOMPARE(report.worstRow, row);
        }
        QCOMPARE(checkMatmulTileExactly(viewOf(a), viewOf(b), viewOf(c)).verdict,
                 Verdict::Rejected);
    }
}

// The exact check accepts an element just inside its bound and rejects one just outside; its
// ratio is the element's own.
void TestMatmulCheck::exactCheckDecidesPerElement() {
    for (DType dtype : {DType::F32, DType::F64}) {
        const auto [a, b] = inputsOf(dtype, 9, 300, 11, Inputs::Scaled, 70);
        const Tensor honest = honestProduct(viewOf(a), viewOf(b));
        const std::int64_t index = 4 * 11 + 6;
        const double bound = elementBound(a, b, 4, 6);
        // The honest element is within its bound already: go from the exact product.
        double exact = 0.0;
        for (std::int64_t p = 0; p < 300; ++p)
            exact += elementAt(a, 4 * 300 + p) * elementAt(b, p * 11 + 6);
        Tensor c = honestProduct(viewOf(a), viewOf(b));
        setElement(c, index, exact + 0.5 * bound);
        auto report = checkMatmulTileExactly(viewOf(a), viewOf(b), viewOf(c));
        QVERIFY2(report.verdict == Verdict::Accepted, report.reason.c_str());
        setElement(c, index, exact + 1.5 * bound);
        report = checkMatmulTileExactly(viewOf(a), viewOf(b), viewOf(c));
        QCOMPARE(report.verdict, Verdict::Rejected);
        QCOMPARE(report.worstRow, std::int64_t{4});
        QCOMPARE(report.worstColumn, std::int64_t{6});
        QVERIFY(report.maxErrorRatio > 1.4 && report.maxErrorRatio < 1.6);
        QVERIFY2(report.reason.find("(4, 6)") != std::string::npos, report.reason.c_str());
        QVERIFY(elementAt(honest, index) != 0.0);
    }
}

void TestMatmulCheck::exactCheckGates() {
    const Tensor a = randomMatrix(DType::F32, 3, 4, 80);
    const Tensor b = randomMatrix(DType::F32, 4, 5, 81);
    Tensor c = honestProduct(viewOf(a), viewOf(b));
    setElement(c, 7, std::numeric_limits<double>::quiet_NaN());
    auto report = checkMatmulTileExactly(viewOf(a), viewOf(b), viewOf(c));
    QCOMPARE(report.verdict, Verdict::Rejected);
    QVERIFY2(report.reason.find("c holds a non-finite value at (1, 2)") != std::string::npos,
             report.reason.c_str());
    QVERIFY(std::isinf(report.maxErrorRatio));
    const Tensor b64 = randomMatrix(DType::F64, 4, 5, 82);
    QCOMPARE(checkMatmulTileExactly(viewOf(a), viewOf(b64), viewOf(c)).verdict, Verdict::Rejected);
    const Tensor wrong = randomMatrix(DType::F32, 5, 3, 83);
    report = checkMatmulTileExactly(viewOf(a), viewOf(b), viewOf(wrong));
    QCOMPARE(report.verdict, Verdict::Rejected);
    QVERIFY2(report.reason.find("5x3") != std::string::npos, report.reason.c_str());
}

// The vectors are the source's: the same seed gives the same probe, another seed another one,
// and every vector is ±[3/4, 1) times its column's weight.
void TestMatmulCheck::vectorsComeFromTheSource() {
    const Tensor b = randomMatrix(DType::F32, 20, 30, 90);
    SeededRandom first(5), again(5), other(6);
    const ColumnProbe one = probeColumns(viewOf(b), {}, first);
    const ColumnProbe same = probeColumns(viewOf(b), {}, again);
    const ColumnProbe different = probeColumns(viewOf(b), {}, other);
    QVERIFY(one.values == same.values);
    QVERIFY(one.values != different.values);
    QCOMPARE(one.values.size(), std::size_t{2 * 30});
    for (std::size_t at = 0; at < one.values.size(); ++at) {
        const double weight = one.weights[at % 30];
        QVERIFY(std::fabs(one.values[at]) >= 0.75 * weight);
        QVERIFY(std::fabs(one.values[at]) < weight);
    }
}

QTEST_APPLESS_MAIN(TestMatmulCheck)
// The f32 sums have an AVX-512 path (eight lanes) and an AVX2/baseline one: on a processor with
// AVX-512 both run here (elsewhere both runs take the same path), from the same probe, over inner
// sizes and widths that take the per-block dot products and the panel products, with rows and
// columns that are not multiples of four or eight. They sum in other orders, so the reports agree
// to the check's own rounding, and both reject the same corrupted element.
void TestMatmulCheck::sumsAgreeWithAndWithoutAvx512() {
    const std::int64_t shapes[][3] = {
        {13, 64, 20}, {37, 96, 100}, {41, 128, 384}, {9, 200, 77}, {64, 130, 1030}};
    for (const auto& shape : shapes) {
        const std::int64_t m = shape[0], k = shape[1], n = shape[2];
        const Tensor a = randomMatrix(DType::F32, m, k, 21);
        const Tensor b = randomMatrix(DType::F32, k, n, 22);
        Tensor c = honestProduct(viewOf(a), viewOf(b));
        SeededRandom probeRandom(23);
        const ColumnProbe probe = probeColumns(viewOf(b), {}, probeRandom);
        const auto run = [&](bool wide) {
            goblin::core::avx512Allowed() = wide;
            return checkMatmulTileWithProbe(viewOf(a), viewOf(b), viewOf(c), probe);
        };
        const auto narrow = run(false), wide = run(true);
        QVERIFY2(narrow.verdict == Verdict::Accepted, narrow.reason.c_str());
        QVERIFY2(wide.verdict == Verdict::Accepted, wide.reason.c_str());
        QCOMPARE(wide.worstRow, narrow.worstRow);
        QVERIFY(std::fabs(wide.maxErrorRatio - narrow.maxErrorRatio) <=
                1e-6 * narrow.maxErrorRatio + 1e-12);
        const std::int64_t at = (m / 2) * n + n - 1; // the last column: a tail lane
        setElement(c, at, elementAt(c, at) + 1.0);
        QCOMPARE(run(false).verdict, Verdict::Rejected);
        QCOMPARE(run(true).verdict, Verdict::Rejected);
    }
}

#include "test_matmul_check.moc"
