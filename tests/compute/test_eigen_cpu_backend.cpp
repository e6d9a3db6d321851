// Tests of the Eigen CPU backend against a float64 triple-loop reference under the γ_K bound.
#include <QtTest/QtTest>

#include "goblin/compute/eigen_cpu_backend.hpp"
#include "support/matmul_reference.hpp"
#include "support/matmul_shapes.hpp"
#include "support/random_tensors.hpp"

using goblin::ErrorCode;
using goblin::compute::CpuBackendOptions;
using goblin::compute::EigenCpuBackend;
using goblin::core::DType;
using goblin::core::Tensor;

using goblin::testing::productErrors;
using goblin::testing::randomTensor;

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
    goblin::testing::addMatmulRows({
        {"1x1·1x1", 1, 1, 1},
        {"1xk·kx1", 1, 257, 1},
        {"kx1·1xk", 33, 1, 31},
        {"non-square", 37, 71, 13},
        {"wide", 5, 19, 300},
        {"blas-sized", 150, 400, 170}, // large enough for Eigen to hand the product to OpenBLAS
    });
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
    const double ratio = productErrors(a, b, *c).worstRatio;
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
