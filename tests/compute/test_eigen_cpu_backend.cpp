// Tests of the Eigen CPU backend against a float64 triple-loop reference under the γ_K bound.
#include <QtTest/QtTest>

#include <cmath>
#include <random>

#include "goblin/compute/eigen_cpu_backend.hpp"

using goblin::ErrorCode;
using goblin::compute::CpuBackendOptions;
using goblin::compute::EigenCpuBackend;
using goblin::core::DType;
using goblin::core::Tensor;

Q_DECLARE_METATYPE(goblin::core::DType)

namespace {

Tensor randomTensor(DType dtype, goblin::core::Shape shape, std::uint64_t seed) {
    Tensor tensor = Tensor::allocate(dtype, std::move(shape)).value();
    std::mt19937_64 engine(seed);
    // Never zero: mixed signs, magnitudes in [0.25, 4).
    std::uniform_real_distribution<double> magnitude(0.25, 4.0);
    for (std::int64_t i = 0; i < tensor.elementCount(); ++i) {
        const double value = (engine() & 1u) != 0 ? -magnitude(engine) : magnitude(engine);
        if (dtype == DType::F32)
            tensor.values<float>()[static_cast<std::size_t>(i)] = static_cast<float>(value);
        else
            tensor.values<double>()[static_cast<std::size_t>(i)] = value;
    }
    return tensor;
}

double elementAt(const Tensor& t, std::int64_t index) {
    const auto at = static_cast<std::size_t>(index);
    return t.dtype() == DType::F32 ? static_cast<double>(t.values<float>()[at])
                                   : t.values<double>()[at];
}

double unitRoundoff(DType dtype) {
    return dtype == DType::F32 ? 0x1p-24 : 0x1p-53;
}

double gamma(std::int64_t n, double u) {
    return static_cast<double>(n) * u / (1.0 - static_cast<double>(n) * u);
}

// Worst |C - A·B| / (γ_K·(|A||B|)) over all elements, with A·B and |A||B| in float64.
double worstErrorRatio(const Tensor& a, const Tensor& b, const Tensor& c) {
    const std::int64_t m = a.shape()[0];
    const std::int64_t k = a.shape()[1];
    const std::int64_t n = b.shape()[1];
    // The f64 reference itself rounds: allow its own γ_K(2^-53) on top.
    const double factor = gamma(k, unitRoundoff(a.dtype())) + gamma(k, 0x1p-53);
    double worst = 0.0;
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
            double exact = 0.0;
            double magnitude = 0.0;
            for (std::int64_t p = 0; p < k; ++p) {
                const double x = elementAt(a, i * k + p);
                const double y = elementAt(b, p * n + j);
                exact += x * y;
                magnitude += std::fabs(x) * std::fabs(y);
            }
            const double error = std::fabs(elementAt(c, i * n + j) - exact);
            worst = std::max(worst, error / (factor * magnitude));
        }
    }
    return worst;
}

} // namespace

class TestEigenCpuBackend : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void nameAndThreads();
    void matchesReference_data();
    void matchesReference();
    void zeroSizedDimensions();
    void rejectsRank3();
    void rejectsDtypeMismatch();
    void rejectsIntegerDtype();
    void rejectsInnerSizeMismatch();
};

void TestEigenCpuBackend::nameAndThreads() {
    EigenCpuBackend two(CpuBackendOptions{2});
    QCOMPARE(two.name(), std::string_view("cpu-eigen"));
    QCOMPARE(two.threads(), 2);
    EigenCpuBackend all(CpuBackendOptions{0});
    QVERIFY(all.threads() >= 1);
}

void TestEigenCpuBackend::matchesReference_data() {
    QTest::addColumn<DType>("dtype");
    QTest::addColumn<qint64>("m");
    QTest::addColumn<qint64>("k");
    QTest::addColumn<qint64>("n");
    for (DType dtype : {DType::F32, DType::F64}) {
        const char* name = dtype == DType::F32 ? "f32" : "f64";
        QTest::addRow("%s 1x1·1x1", name) << dtype << qint64{1} << qint64{1} << qint64{1};
        QTest::addRow("%s 1xk·kx1", name) << dtype << qint64{1} << qint64{257} << qint64{1};
        QTest::addRow("%s kx1·1xk", name) << dtype << qint64{33} << qint64{1} << qint64{31};
        QTest::addRow("%s non-square", name) << dtype << qint64{37} << qint64{71} << qint64{13};
        QTest::addRow("%s wide", name) << dtype << qint64{5} << qint64{19} << qint64{300};
        // Large enough for Eigen to hand the product to OpenBLAS.
        QTest::addRow("%s blas-sized", name) << dtype << qint64{150} << qint64{400} << qint64{170};
    }
}

void TestEigenCpuBackend::matchesReference() {
    QFETCH(DType, dtype);
    QFETCH(qint64, m);
    QFETCH(qint64, k);
    QFETCH(qint64, n);
    EigenCpuBackend backend(CpuBackendOptions{2});
    const Tensor a = randomTensor(dtype, {m, k}, 1);
    const Tensor b = randomTensor(dtype, {k, n}, 2);
    auto c = backend.matmul(a, b);
    QVERIFY2(c.has_value(), c ? "" : c.error().describe().c_str());
    QCOMPARE(c->dtype(), dtype);
    QCOMPARE(c->shape(), (goblin::core::Shape{m, n}));
    const double ratio = worstErrorRatio(a, b, *c);
    QVERIFY2(ratio <= 1.0, qPrintable(QString::number(ratio)));
}

void TestEigenCpuBackend::zeroSizedDimensions() {
    EigenCpuBackend backend(CpuBackendOptions{1});
    auto c = backend.matmul(Tensor::allocate(DType::F32, {3, 0}).value(),
                            Tensor::allocate(DType::F32, {0, 4}).value());
    QVERIFY(c.has_value());
    QCOMPARE(c->shape(), (goblin::core::Shape{3, 4}));
    for (float value : c->values<float>())
        QCOMPARE(value, 0.0f);
    auto empty = backend.matmul(Tensor::allocate(DType::F64, {0, 5}).value(),
                                randomTensor(DType::F64, {5, 2}, 3));
    QVERIFY(empty.has_value());
    QCOMPARE(empty->shape(), (goblin::core::Shape{0, 2}));
    QCOMPARE(empty->byteSize(), std::size_t{0});
}

void TestEigenCpuBackend::rejectsRank3() {
    EigenCpuBackend backend(CpuBackendOptions{1});
    auto c =
        backend.matmul(randomTensor(DType::F32, {2, 3, 4}, 4), randomTensor(DType::F32, {4, 2}, 5));
    QVERIFY(!c.has_value());
    QCOMPARE(c.error().code, ErrorCode::ShapeMismatch);
    c = backend.matmul(randomTensor(DType::F32, {2, 3}, 4), randomTensor(DType::F32, {3}, 5));
    QVERIFY(!c.has_value());
    QCOMPARE(c.error().code, ErrorCode::ShapeMismatch);
}

void TestEigenCpuBackend::rejectsDtypeMismatch() {
    EigenCpuBackend backend(CpuBackendOptions{1});
    auto c =
        backend.matmul(randomTensor(DType::F32, {2, 3}, 6), randomTensor(DType::F64, {3, 2}, 7));
    QVERIFY(!c.has_value());
    QCOMPARE(c.error().code, ErrorCode::UnsupportedDtype);
}

void TestEigenCpuBackend::rejectsIntegerDtype() {
    EigenCpuBackend backend(CpuBackendOptions{1});
    auto c = backend.matmul(Tensor::allocate(DType::I32, {2, 3}).value(),
                            Tensor::allocate(DType::I32, {3, 2}).value());
    QVERIFY(!c.has_value());
    QCOMPARE(c.error().code, ErrorCode::UnsupportedDtype);
    QVERIFY2(c.error().message.find("i32") != std::string::npos, c.error().message.c_str());
}

void TestEigenCpuBackend::rejectsInnerSizeMismatch() {
    EigenCpuBackend backend(CpuBackendOptions{1});
    auto c =
        backend.matmul(randomTensor(DType::F64, {2, 3}, 8), randomTensor(DType::F64, {4, 2}, 9));
    QVERIFY(!c.has_value());
    QCOMPARE(c.error().code, ErrorCode::ShapeMismatch);
}

QTEST_APPLESS_MAIN(TestEigenCpuBackend)
#include "test_eigen_cpu_backend.moc"
