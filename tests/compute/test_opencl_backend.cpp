// Tests of the OpenCL/CLBlast backend and our own kernels against the Eigen backend and a float64
// reference, under the sound bound γ_K·(|A||B|). They run on PoCL in CI; with no OpenCL device
// they skip with a message, unless GOBLIN_REQUIRE_OPENCL=1 (set by the ci preset) makes that a
// failure.
#include <QtTest/QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>

#include "goblin/compute/eigen_cpu_backend.hpp"
#include "goblin/compute/gemm_calibration.hpp"
#include "goblin/compute/opencl_backend.hpp"
#include "support/matmul_reference.hpp"
#include "support/matmul_shapes.hpp"
#include "support/random_tensors.hpp"

using goblin::ErrorCode;
using goblin::compute::CpuBackendOptions;
using goblin::compute::EigenCpuBackend;
using goblin::compute::OpenClBackend;
using goblin::compute::OpenClBackendOptions;
using goblin::compute::SliceHooks;
using goblin::core::DType;
using goblin::core::Tensor;
using goblin::testing::productErrors;
using goblin::testing::randomTensor;

namespace {

using Clock = std::chrono::steady_clock;

std::unique_ptr<OpenClBackend> makeBackend(OpenClBackendOptions options = {}) {
    auto backend = OpenClBackend::create(options);
    if (!backend)
        qFatal("cannot open OpenCL device 0: %s", backend.error().describe().c_str());
    return std::move(*backend);
}

template <class Predicate> bool waitFor(Predicate&& done, std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    while (!done()) {
        if (Clock::now() > deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return true;
}

// A pause switch for the slice hooks: the test thread pauses and resumes; the compute thread counts
// slices and blocks in the hook while paused.
class SlicePause {
public:
    void pause() {
        std::lock_guard lock(m_mutex);
        m_paused = true;
    }
    void resume() {
        {
            std::lock_guard lock(m_mutex);
            m_paused = false;
        }
        m_resumed.notify_all();
    }
    bool parked() const { return m_parked.load(); }
    std::int64_t slicesDone() const { return m_slicesDone.load(); }
    SliceHooks hooks() {
        SliceHooks hooks;
        hooks.betweenSlices = [this](double, double) {
            m_slicesDone.fetch_add(1);
            std::unique_lock lock(m_mutex);
            if (!m_paused)
                return true;
            m_parked = true;
            m_resumed.wait(lock, [this] { return !m_paused; });
            m_parked = false;
            return true;
        };
        return hooks;
    }

private:
    std::mutex m_mutex;
    std::condition_variable m_resumed;
    bool m_paused = false; // guarded by m_mutex
    std::atomic<bool> m_parked{false};
    std::atomic<std::int64_t> m_slicesDone{0};
};

} // namespace

class TestOpenClBackend : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void describesDevice();
    void matchesEigen_data();
    void matchesEigen();
    void slicedMatchesEigen_data();
    void slicedMatchesEigen();
    void finiteScanMatchesCpu_data();
    void finiteScanMatchesCpu();
    void nonFiniteProductIsAnError();
    void refusesOversizeBeforeAllocating();
    void unknownDeviceIsNotFound();
    void validatesLikeEigen();
    void pauseHonouredBetweenSlices();
    void hooksStopAndReportProgress();
    void calibratedParametersStayCorrect_data();
    void calibratedParametersStayCorrect();
    void calibrationNeverKeepsWrongParameters();

private:
    // c within the sound bound of the float64 reference, and of the Eigen backend's product.
    void compareWithEigen(const Tensor& a, const Tensor& b, const Tensor& c);

    std::unique_ptr<OpenClBackend> m_backend;
    EigenCpuBackend m_eigen{CpuBackendOptions{2}};
};

void TestOpenClBackend::compareWithEigen(const Tensor& a, const Tensor& b, const Tensor& c) {
    auto reference = m_eigen.matmul(a, b);
    QVERIFY(reference.has_value());
    const auto errors = productErrors(a, b, c, &*reference);
    QVERIFY2(errors.worstRatio <= 1.0, qPrintable(QString::number(errors.worstRatio)));
    QVERIFY2(errors.worstPairRatio <= 1.0, qPrintable(QString::number(errors.worstPairRatio)));
}

void TestOpenClBackend::initTestCase() {
    auto devices = goblin::compute::listOpenClDevices();
    QVERIFY2(devices.has_value(), devices ? "" : devices.error().describe().c_str());
    if (devices->empty()) {
        if (qEnvironmentVariableIntValue("GOBLIN_REQUIRE_OPENCL") == 1)
            QFAIL("no OpenCL device, but GOBLIN_REQUIRE_OPENCL=1 (install pocl-opencl-icd)");
        QSKIP("no OpenCL device on this machine: skipping every OpenCL test");
    }
    qInfo("OpenCL device 0: %s (%s, driver %s)", (*devices)[0].name.c_str(),
          (*devices)[0].platform.c_str(), (*devices)[0].driverVersion.c_str());
    m_backend = makeBackend();
    qInfo("measured %.1f GFLOP/s for slicing", m_backend->estimatedGflops());
}

void TestOpenClBackend::describesDevice() {
    const auto& info = m_backend->device();
    QCOMPARE(m_backend->name(), std::string_view("opencl-clblast"));
    QCOMPARE(info.index, 0);
    QVERIFY(!info.name.empty());
    QVERIFY(!info.driverVersion.empty());
    QVERIFY(info.globalMemoryBytes > 0);
    QVERIFY(info.maxAllocBytes > 0 && info.maxAllocBytes <= info.globalMemoryBytes);
    QVERIFY(info.computeUnits > 0);
    QVERIFY(m_backend->estimatedGflops() > 0);
}

void TestOpenClBackend::matchesEigen_data() {
    goblin::testing::addMatmulRows({
        {"1x1·1x1", 1, 1, 1},
        {"1xk·kx1", 1, 1000, 1},
        {"kx1·1xk", 33, 1, 31},
        {"primes", 37, 71, 13},
        {"tile multiple", 64, 128, 64},
        {"tile+1", 129, 257, 65},
        {"wide", 5, 19, 300},
        {"large", 300, 301, 259},
    });
}

void TestOpenClBackend::matchesEigen() {
    QFETCH(DType, dtype);
    QFETCH(qint64, m);
    QFETCH(qint64, k);
    QFETCH(qint64, n);
    if (dtype == DType::F64 && !m_backend->device().fp64) {
        auto refused =
            m_backend->matmul(randomTensor(dtype, {m, k}, 1), randomTensor(dtype, {k, n}, 2));
        QVERIFY(!refused.has_value());
        QCOMPARE(refused.error().code, ErrorCode::UnsupportedDtype);
        QSKIP("the device has no fp64: checked that f64 is refused");
    }
    const Tensor a = randomTensor(dtype, {m, k}, 11 + m);
    const Tensor b = randomTensor(dtype, {k, n}, 12 + n);
    auto c = m_backend->matmul(a, b);
    QVERIFY2(c.has_value(), c ? "" : c.error().describe().c_str());
    QCOMPARE(c->dtype(), dtype);
    QCOMPARE(c->shape(), (goblin::core::Shape{m, n}));
    compareWithEigen(a, b, *c);
}

void TestOpenClBackend::slicedMatchesEigen_data() {
    goblin::testing::addMatmulRows({
        {"rows and k cut", 200, 301, 97},
        {"1xk·kx1", 1, 4099, 1},
    });
}

void TestOpenClBackend::slicedMatchesEigen() {
    QFETCH(DType, dtype);
    QFETCH(qint64, m);
    QFETCH(qint64, k);
    QFETCH(qint64, n);
    if (dtype == DType::F64 && !m_backend->device().fp64)
        QSKIP("the device has no fp64");
    // A budget far below any real kernel: every slice is the smallest (64 rows × 64 deep).
    OpenClBackendOptions options;
    options.sliceSeconds = 1e-9;
    options.assumedGflops = 1.0;
    auto sliced = makeBackend(options);
    const Tensor a = randomTensor(dtype, {m, k}, 21);
    const Tensor b = randomTensor(dtype, {k, n}, 22);
    auto c = sliced->matmul(a, b);
    QVERIFY2(c.has_value(), c ? "" : c.error().describe().c_str());
    const auto expectedSlices = static_cast<std::size_t>(((m + 63) / 64) * ((k + 63) / 64));
    QCOMPARE(sliced->lastSliceCount(), expectedSlices);
    compareWithEigen(a, b, *c);
}

void TestOpenClBackend::finiteScanMatchesCpu_data() {
    QTest::addColumn<DType>("dtype");
    QTest::addColumn<qint64>("size");
    QTest::addColumn<int>("bad");
    for (DType dtype : {DType::F32, DType::F64}) {
        const char* name = dtype == DType::F32 ? "f32" : "f64";
        QTest::addRow("%s one finite", name) << dtype << qint64{1} << 0;
        QTest::addRow("%s one bad", name) << dtype << qint64{1} << 1;
        QTest::addRow("%s odd size", name) << dtype << qint64{63} << 5;
        QTest::addRow("%s large clean", name) << dtype << qint64{100003} << 0;
        QTest::addRow("%s large dirty", name) << dtype << qint64{100003} << 97;
    }
}

void TestOpenClBackend::finiteScanMatchesCpu() {
    QFETCH(DType, dtype);
    QFETCH(qint64, size);
    QFETCH(int, bad);
    if (dtype == DType::F64 && !m_backend->device().fp64)
        QSKIP("the device has no fp64");
    Tensor values = randomTensor(dtype, {size}, 31);
    std::mt19937_64 engine(32);
    const double specials[] = {std::numeric_limits<double>::quiet_NaN(), INFINITY, -INFINITY};
    for (int i = 0; i < bad; ++i) {
        const auto at = static_cast<std::size_t>(engine() % static_cast<std::uint64_t>(size));
        const double special = specials[i % 3];
        if (dtype == DType::F32)
            values.values<float>()[at] = static_cast<float>(special);
        else
            values.values<double>()[at] = special;
    }
    std::uint64_t expected = 0; // positions may repeat: count what is there
    for (std::int64_t i = 0; i < size; ++i)
        expected += std::isfinite(goblin::testing::elementAt(values, i)) ? 0 : 1;
    auto counted = m_backend->countNonFinite(values);
    QVERIFY2(counted.has_value(), counted ? "" : counted.error().describe().c_str());
    QCOMPARE(*counted, expected);
}

void TestOpenClBackend::nonFiniteProductIsAnError() {
    // A NaN that reaches the product (here through the input, as a device fault would): the
    // backend must refuse to hand such a product back as a result.
    Tensor a = randomTensor(DType::F32, {3, 4}, 41);
    a.values<float>()[5] = std::numeric_limits<float>::quiet_NaN();
    auto c = m_backend->matmul(a, randomTensor(DType::F32, {4, 2}, 42));
    QVERIFY(!c.has_value());
    QCOMPARE(c.error().code, ErrorCode::Internal);
    QVERIFY2(c.error().message.find("NaN/Inf") != std::string::npos, c.error().message.c_str());
}

void TestOpenClBackend::refusesOversizeBeforeAllocating() {
    OpenClBackendOptions options;
    options.memoryCapBytes = 1 << 20;
    options.assumedGflops = 1.0;
    auto small = makeBackend(options);
    const std::int64_t before = small->buffersAllocated();
    auto c = small->matmul(randomTensor(DType::F32, {600, 600}, 51),
                           randomTensor(DType::F32, {600, 8}, 52));
    QVERIFY(!c.has_value());
    QCOMPARE(c.error().code, ErrorCode::LimitExceeded);
    QCOMPARE(small->buffersAllocated(), before);
    // A product that fits still runs on the capped backend.
    auto fits = small->matmul(randomTensor(DType::F32, {60, 60}, 53),
                              randomTensor(DType::F32, {60, 8}, 54));
    QVERIFY2(fits.has_value(), fits ? "" : fits.error().describe().c_str());
}

void TestOpenClBackend::unknownDeviceIsNotFound() {
    OpenClBackendOptions options;
    options.device = 999;
    auto backend = OpenClBackend::create(options);
    QVERIFY(!backend.has_value());
    QCOMPARE(backend.error().code, ErrorCode::NotFound);
}

void TestOpenClBackend::validatesLikeEigen() {
    auto c = m_backend->matmul(randomTensor(DType::F32, {2, 3}, 61),
                               randomTensor(DType::F32, {4, 2}, 62));
    QVERIFY(!c.has_value());
    QCOMPARE(c.error().code, ErrorCode::ShapeMismatch);
    c = m_backend->matmul(Tensor::allocate(DType::I32, {2, 3}).value(),
                          Tensor::allocate(DType::I32, {3, 2}).value());
    QVERIFY(!c.has_value());
    QCOMPARE(c.error().code, ErrorCode::UnsupportedDtype);
    c = m_backend->matmul(Tensor::allocate(DType::F32, {3, 0}).value(),
                          Tensor::allocate(DType::F32, {0, 2}).value());
    QVERIFY(c.has_value());
    for (float value : c->values<float>())
        QCOMPARE(value, 0.0f);
}

void TestOpenClBackend::pauseHonouredBetweenSlices() {
    SlicePause token;
    OpenClBackendOptions options;
    options.sliceSeconds = 1e-9; // smallest slices: 8 row blocks × 32 depth blocks
    options.assumedGflops = 1.0;
    auto backend = makeBackend(options);
    const Tensor a = randomTensor(DType::F32, {512, 2048}, 71);
    const Tensor b = randomTensor(DType::F32, {2048, 96}, 72);
    std::atomic<bool> finished{false};
    goblin::Expected<Tensor> product = tl::unexpected(goblin::Error{});
    std::thread worker([&] {
        product = backend->matmul(a, b, token.hooks());
        finished = true;
    });
    const bool started = waitFor([&] { return token.slicesDone() >= 1; }, std::chrono::seconds(60));
    token.pause();
    const auto pausedAt = Clock::now();
    const bool parked = started && waitFor([&] { return token.parked(); }, std::chrono::seconds(5));
    const auto reaction = Clock::now() - pausedAt;
    const std::int64_t doneWhenParked = token.slicesDone();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const bool stayedPaused = token.slicesDone() == doneWhenParked && !finished;
    token.resume();
    worker.join();
    QVERIFY2(started, "no slice finished within 60 s");
    QVERIFY2(parked, "the worker did not park within 5 s of the pause request");
    QVERIFY2(reaction < std::chrono::seconds(1),
             qPrintable(QStringLiteral("parked after %1 ms")
                            .arg(std::chrono::duration<double, std::milli>(reaction).count())));
    QVERIFY2(stayedPaused, "slices ran while paused");
    QVERIFY2(product.has_value(), product ? "" : product.error().describe().c_str());
    QCOMPARE(backend->lastSliceCount(), std::size_t{8 * 32});
    QCOMPARE(token.slicesDone(), std::int64_t{8 * 32});
    const auto errors = productErrors(a, b, *product);
    QVERIFY2(errors.worstRatio <= 1.0, qPrintable(QString::number(errors.worstRatio)));
}

void TestOpenClBackend::hooksStopAndReportProgress() {
    OpenClBackendOptions options;
    options.sliceSeconds = 1e-9; // smallest slices: 2 row blocks × 4 depth blocks
    options.assumedGflops = 1.0;
    auto backend = makeBackend(options);
    const Tensor a = randomTensor(DType::F32, {128, 256}, 73);
    const Tensor b = randomTensor(DType::F32, {256, 40}, 74);
    QVERIFY(backend->slicesInternally(a, b));
    std::vector<double> fractions;
    double busy = 0;
    SliceHooks hooks;
    hooks.betweenSlices = [&](double busySeconds, double fraction) {
        busy += busySeconds;
        fractions.push_back(fraction);
        return true;
    };
    auto product = backend->matmul(a, b, hooks);
    QVERIFY2(product.has_value(), product ? "" : product.error().describe().c_str());
    QCOMPARE(fractions.size(), backend->lastSliceCount());
    QVERIFY(fractions.size() > 1);
    for (std::size_t i = 1; i < fractions.size(); ++i)
        QVERIFY(fractions[i] > fractions[i - 1]);
    QCOMPARE(fractions.back(), 1.0);
    QVERIFY(busy > 0);
    // The same slices without hooks give the same bits.
    auto plain = backend->matmul(a, b);
    QVERIFY(plain.has_value());
    QVERIFY(std::equal(plain->bytes().begin(), plain->bytes().end(), product->bytes().begin()));

    int calls = 0;
    hooks.betweenSlices = [&](double, double) { return ++calls < 3; };
    auto stopped = backend->matmul(a, b, hooks);
    QVERIFY(!stopped.has_value());
    QCOMPARE(stopped.error().code, ErrorCode::Internal);
    QCOMPARE(calls, 3);
}

namespace {

// Worst error ratio of an indirect-Xgemm-sized product (odd sizes) under `parameters`; restores
// CLBlast's own parameters afterwards (overrides are per device, so they would leak).
double ratioWith(OpenClBackend& backend, const goblin::compute::GemmParameters& parameters) {
    const Tensor a = randomTensor(DType::F32, {961, 903}, 81);
    const Tensor b = randomTensor(DType::F32, {903, 897}, 82);
    if (!backend.setGemmParameters(DType::F32, parameters))
        return INFINITY;
    auto c = backend.matmul(a, b);
    (void)backend.setGemmParameters(DType::F32, {});
    return c ? productErrors(a, b, *c).worstRatio : INFINITY;
}

} // namespace

void TestOpenClBackend::calibratedParametersStayCorrect_data() {
    QTest::addColumn<int>("candidate");
    QTest::addRow("hand-picked GEMMK=0") << 1;
    QTest::addRow("hand-picked local memory") << 3;
    QTest::addRow("grid") << 40;
}

void TestOpenClBackend::calibratedParametersStayCorrect() {
    QFETCH(int, candidate);
    const auto candidates = goblin::compute::xgemmCandidates(m_backend->device(), DType::F32);
    QVERIFY(candidates.size() > static_cast<std::size_t>(candidate));
    const double ratio = ratioWith(*m_backend, candidates[static_cast<std::size_t>(candidate)]);
    QVERIFY2(ratio <= 1.0, qPrintable(QString::number(ratio)));
}

void TestOpenClBackend::calibrationNeverKeepsWrongParameters() {
    const auto all = goblin::compute::xgemmCandidates(m_backend->device(), DType::F32);
    const auto& suspect = all[0]; // GEMMK=1: wrong products on PoCL 3.1 (xgemm_candidates.txt)
    const bool suspectIsWrong = !(ratioWith(*m_backend, suspect) <= 1.0);
    OpenClBackendOptions options;
    options.assumedGflops = 1.0;
    auto backend = makeBackend(options);
    goblin::compute::CalibrationOptions calibration;
    calibration.timeLimitSeconds = 600;
    calibration.candidates = {suspect, all[1]};
    auto result = goblin::compute::calibrateGemm(*backend, DType::F32, calibration);
    QVERIFY2(result.has_value(), result ? "" : result.error().describe().c_str());
    QCOMPARE(result->tried, 2);
    QCOMPARE(backend->sliceSeconds(), 0.5); // the calibration's unsliced budget was undone
    if (suspectIsWrong) {
        QCOMPARE(result->wrong, 1);
        QVERIFY(result->best != suspect);
    }
    // Whatever was kept is applied and computes right.
    const Tensor a = randomTensor(DType::F32, {961, 903}, 91);
    const Tensor b = randomTensor(DType::F32, {903, 897}, 92);
    backend->setSliceSeconds(1e9);
    auto c = backend->matmul(a, b);
    (void)backend->setGemmParameters(DType::F32, {});
    QVERIFY2(c.has_value(), c ? "" : c.error().describe().c_str());
    QVERIFY(productErrors(a, b, *c).worstRatio <= 1.0);
    if (!suspectIsWrong)
        QSKIP("the GEMMK=1 candidate computes right on this device: wrong-candidate check not hit");
}

QTEST_APPLESS_MAIN(TestOpenClBackend)
#include "test_opencl_backend.moc"
