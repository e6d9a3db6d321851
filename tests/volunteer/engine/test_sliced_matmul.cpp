// Sliced matmul through the compute gate: the same answer as one backend call, in many slices;
// a pause parks the compute thread between slices and a resume finishes the tile; shutdown
// abandons it; a duty limit rests between slices; backend errors pass through. On an OpenCL
// device (PoCL in CI; skipped without one unless GOBLIN_REQUIRE_OPENCL=1) a tile is one backend
// call whose own slices pause and resume through the gate. Rests run on a fake clock, and every
// wait below waits for an event (a slice, a park), never for wall time to pass.
#include <QScopeGuard>
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

#include "fake_gate_clock.hpp"
#include "goblin/compute/eigen_cpu_backend.hpp"
#include "goblin/compute/opencl_backend.hpp"
#include "sliced_matmul.hpp"

using namespace goblin;
using namespace goblin::volunteer;
using goblin::volunteer::testing::FakeGateClock;
using namespace std::chrono_literals;

namespace {

core::Tensor randomMatrix(std::int64_t rows, std::int64_t cols, unsigned seed) {
    auto tensor = core::Tensor::allocate(core::DType::F64, {rows, cols});
    std::mt19937 random(seed);
    std::uniform_real_distribution<double> value(-1.0, 1.0);
    for (double& x : tensor->values<double>())
        x = value(random);
    return std::move(*tensor);
}

double maxDifference(const core::Tensor& x, const core::Tensor& y) {
    double worst = 0;
    for (std::size_t i = 0; i < x.values<double>().size(); ++i)
        worst = std::max(worst, std::abs(x.values<double>()[i] - y.values<double>()[i]));
    return worst;
}

core::Tensor randomF32(std::int64_t rows, std::int64_t cols, unsigned seed) {
    auto tensor = core::Tensor::allocate(core::DType::F32, {rows, cols});
    std::mt19937 random(seed);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    for (float& x : tensor->values<float>())
        x = value(random);
    return std::move(*tensor);
}

// Forwards to another backend, counting the calls.
class CountingBackend final : public compute::Backend {
public:
    explicit CountingBackend(compute::Backend& inner) : m_inner(inner) {}
    std::string_view name() const override { return m_inner.name(); }
    using compute::Backend::matmul;
    Expected<core::Tensor> matmul(const core::Tensor& a, const core::Tensor& b,
                                  const compute::SliceHooks& hooks) override {
        ++calls;
        return m_inner.matmul(a, b, hooks);
    }
    bool slicesInternally(const core::Tensor& a, const core::Tensor& b) const override {
        return m_inner.slicesInternally(a, b);
    }
    std::atomic<int> calls{0};

private:
    compute::Backend& m_inner;
};

// Runs a tile at 10 % duty on a worker thread, with its rests on a fake clock: the worker rests
// after its first slice until the test moves the clock, and is paused while resting after its
// second. Checks that it parks there (no slice after the pause) and stays parked however much time
// passes, resumes, and returns the result and the slice counts. `timeoutMs` only bounds the waits
// for the worker's events (a failure, never the measure of a pass).
struct PausedRun {
    std::optional<Expected<SlicedResult>> result;
    int slices = 0;
    int slicesAtPause = 0;
};

PausedRun runPausedMidTile(compute::Backend& backend, SliceTuning tuning, const core::Tensor& a,
                           const core::Tensor& b, int timeoutMs) {
    FakeGateClock clock;
    ComputeGate gate(clock);
    clock.onAdvance([&] { gate.wake(); });
    std::atomic<int> slices{0};
    SlicedRun hooks;
    hooks.progress = [&](double) { ++slices; };
    gate.setPlan({.run = true, .dutyPercent = 10}); // the worker rests after every slice
    PausedRun run;                                  // .result is the worker's until `finished`
    std::atomic<bool> finished{false};
    std::thread worker([&] {
        run.result = slicedMatmul(backend, gate, tuning, a, b, hooks);
        finished = true;
    });
    // Whatever happens below, the worker is released and joined before the locals go away.
    const auto release = qScopeGuard([&] {
        gate.shutdown();
        worker.join();
    });
    [&] {
        clock.awaitSleep(1); // resting after slice 1, until the clock moves
        QCOMPARE(slices.load(), 1);
        clock.advance(1h);
        clock.awaitSleep(2); // resting after slice 2
        QCOMPARE(slices.load(), 2);
        gate.setPlan({.run = false}); // the pause cuts the rest short and parks
        QTRY_VERIFY_WITH_TIMEOUT(gate.parked(), timeoutMs);
        run.slicesAtPause = slices.load();
        QCOMPARE(run.slicesAtPause, 2);
        clock.advance(24h); // however long it waits, a paused worker computes nothing
        QVERIFY(gate.parked());
        QCOMPARE(slices.load(), run.slicesAtPause);
        QVERIFY(!finished);
        gate.setPlan({});
        QTRY_VERIFY_WITH_TIMEOUT(finished.load(), timeoutMs);
    }();
    run.slices = slices.load();
    return run;
}

} // namespace

class TestSlicedMatmul : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void matchesOneCall();
    void fullDutySlicesAreLonger();
    void pauseParksBetweenSlices();
    void shutdownAbandons();
    void errorsPassThrough();
    void appliesThreadChanges();
    void deviceTileIsOneCallThatPauses();
};

void TestSlicedMatmul::matchesOneCall() {
    compute::EigenCpuBackend backend({1});
    ComputeGate gate;
    SliceTuning tuning;
    tuning.sliceSeconds = 0; // one row per slice
    const auto a = randomMatrix(37, 19, 1), b = randomMatrix(19, 23, 2);
    int slices = 0;
    double last = 0;
    SlicedRun hooks;
    hooks.progress = [&](double fraction) {
        QVERIFY(fraction > last);
        last = fraction;
        ++slices;
    };
    auto result = slicedMatmul(backend, gate, tuning, a, b, hooks);
    QVERIFY(result && *result);
    QCOMPARE(last, 1.0);
    QCOMPARE(slices, 37);
    const auto reference = backend.matmul(a, b);
    QCOMPARE((*result)->product.shape(), reference->shape());
    QVERIFY(maxDifference((*result)->product, *reference) < 1e-12);
}

// The first slice's rows follow from the speed estimate and the slice time, so its share of the
// tile shows the slice time without timing anything: 0.05 s under a duty limit, 0.25 s at full.
void TestSlicedMatmul::fullDutySlicesAreLonger() {
    compute::EigenCpuBackend backend({1});
    const auto a = randomMatrix(1000, 10, 5), b = randomMatrix(10, 10, 6);
    const auto firstSliceShare = [&](int dutyPercent) {
        ComputeGate gate;
        gate.setPlan({.run = true, .dutyPercent = dutyPercent});
        SliceTuning tuning;
        tuning.flopsPerSecond = 40000; // 200 flops a row: 200 rows a second
        double first = 0;
        SlicedRun hooks;
        hooks.progress = [&](double fraction) {
            if (first == 0)
                first = fraction;
        };
        hooks.cancelled = [] { return true; }; // stop after the first slice
        const auto result = slicedMatmul(backend, gate, tuning, a, b, hooks);
        return result ? -1.0 : first;
    };
    QCOMPARE(firstSliceShare(50), 0.01);  // 10 rows: 0.05 s at 200 rows a second
    QCOMPARE(firstSliceShare(100), 0.05); // 50 rows: 0.25 s
}

void TestSlicedMatmul::pauseParksBetweenSlices() {
    compute::EigenCpuBackend backend({1});
    SliceTuning tuning;
    tuning.sliceSeconds = 0; // one row per slice: 200 slices
    const auto a = randomMatrix(200, 64, 3), b = randomMatrix(64, 48, 4);
    const PausedRun run = runPausedMidTile(backend, tuning, a, b, 20000);
    if (QTest::currentTestFailed())
        return;
    const auto& result = run.result;
    QVERIFY(result && *result);
    QCOMPARE(run.slices, 200);
    QVERIFY(maxDifference((*result)->product, *backend.matmul(a, b)) < 1e-9);
}

void TestSlicedMatmul::shutdownAbandons() {
    compute::EigenCpuBackend backend({1});
    ComputeGate gate;
    SliceTuning tuning;
    tuning.sliceSeconds = 0; // one row per slice: it parks after the first
    const auto a = randomMatrix(100, 32, 5), b = randomMatrix(32, 32, 6);
    gate.setPlan({.run = false});
    std::optional<Expected<SlicedResult>> result{Expected<SlicedResult>{}};
    std::thread worker([&] { result = slicedMatmul(backend, gate, tuning, a, b, {}); });
    QTRY_VERIFY_WITH_TIMEOUT(gate.parked(), 5000);
    gate.shutdown();
    worker.join();
    QVERIFY(!result.has_value());
    QCOMPARE(gate.enterTask(), GateVerdict::Shutdown);
}

void TestSlicedMatmul::errorsPassThrough() {
    compute::EigenCpuBackend backend({1});
    ComputeGate gate;
    SliceTuning tuning;
    auto result =
        slicedMatmul(backend, gate, tuning, randomMatrix(4, 3, 7), randomMatrix(5, 2, 8), {});
    QVERIFY(result && !*result);
    QCOMPARE(result->error().code, ErrorCode::ShapeMismatch);
    auto vector = core::Tensor::allocate(core::DType::F64, {3});
    result = slicedMatmul(backend, gate, tuning, *vector, randomMatrix(3, 2, 9), {});
    QVERIFY(result && !*result);
}

void TestSlicedMatmul::appliesThreadChanges() {
    compute::EigenCpuBackend backend({1});
    ComputeGate gate;
    SliceTuning tuning;
    QList<int> applied;
    SlicedRun hooks;
    hooks.applyThreads = [&](int threads) { applied.append(threads); };
    gate.setPlan({.threads = 2});
    QVERIFY(
        slicedMatmul(backend, gate, tuning, randomMatrix(8, 8, 1), randomMatrix(8, 8, 2), hooks));
    QVERIFY(
        slicedMatmul(backend, gate, tuning, randomMatrix(8, 8, 1), randomMatrix(8, 8, 2), hooks));
    gate.setPlan({.threads = 1});
    QVERIFY(
        slicedMatmul(backend, gate, tuning, randomMatrix(8, 8, 1), randomMatrix(8, 8, 2), hooks));
    QCOMPARE(applied, (QList<int>{2, 1}));
}

void TestSlicedMatmul::deviceTileIsOneCallThatPauses() {
    auto devices = compute::listOpenClDevices();
    QVERIFY(devices.has_value());
    if (devices->empty()) {
        if (qEnvironmentVariableIntValue("GOBLIN_REQUIRE_OPENCL") == 1)
            QFAIL("no OpenCL device, but GOBLIN_REQUIRE_OPENCL=1 (install pocl-opencl-icd)");
        QSKIP("no OpenCL device: the device tile is not tested here");
    }
    compute::OpenClBackendOptions options;
    options.sliceSeconds = 1e-9; // smallest slices: 8 row blocks × 32 depth blocks
    options.assumedGflops = 1.0;
    auto opened = compute::OpenClBackend::create(options);
    QVERIFY2(opened.has_value(), opened ? "" : opened.error().describe().c_str());
    compute::OpenClBackend& device = **opened;
    CountingBackend backend(device);
    const auto a = randomF32(512, 2048, 11), b = randomF32(2048, 96, 12);
    const PausedRun run = runPausedMidTile(backend, SliceTuning{}, a, b, 60000);
    if (QTest::currentTestFailed())
        return;
    const auto& result = run.result;
    QVERIFY(result && *result);
    QCOMPARE(backend.calls.load(), 1);
    QCOMPARE(run.slices, 8 * 32);
    QVERIFY((*result)->busySeconds > 0);
    // The same slices unpaused give the same bits.
    const auto unpaused = device.matmul(a, b);
    QVERIFY(unpaused.has_value());
    QCOMPARE((*result)->product.shape(), unpaused->shape());
    QVERIFY(std::equal(unpaused->bytes().begin(), unpaused->bytes().end(),
                       (*result)->product.bytes().begin()));
}

QTEST_APPLESS_MAIN(TestSlicedMatmul)
#include "test_sliced_matmul.moc"
