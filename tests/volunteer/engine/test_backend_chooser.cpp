// Tests of the volunteer's backend choice: device first, CPU for what the device refuses, and a
// device failure fails one task then sends every later one to the CPU; a stop the caller asks
// through the slice hooks is not a device failure. Fake backends, no OpenCL.
#include <QtTest/QtTest>

#include <deque>

#include "backend_chooser.hpp"

using goblin::Error;
using goblin::ErrorCode;
using goblin::Expected;
using goblin::core::DType;
using goblin::core::Tensor;
using goblin::volunteer::BackendChooser;

namespace {

// Answers with a 1×1 tensor holding `marker`, or with the next scripted error.
class FakeBackend final : public goblin::compute::Backend {
public:
    FakeBackend(std::string name, float marker, int* calls, bool slices)
        : m_name(std::move(name)), m_marker(marker), m_calls(calls), m_slices(slices) {}
    std::string_view name() const override { return m_name; }
    bool slicesInternally(const Tensor&, const Tensor&) const override { return m_slices; }
    using goblin::compute::Backend::matmul;
    // A slicing fake calls the hooks once, half way, and stops when they say so.
    Expected<Tensor> matmul(const Tensor&, const Tensor&,
                            const goblin::compute::SliceHooks& hooks) override {
        ++*m_calls;
        if (m_slices && hooks.betweenSlices && !hooks.betweenSlices(0.01, 0.5))
            return tl::unexpected(Error{ErrorCode::Internal, "stopped after slice 1"});
        if (!errors.empty()) {
            Error error = errors.front();
            errors.pop_front();
            return tl::unexpected(error);
        }
        Tensor out = Tensor::allocate(DType::F32, {1, 1}).value();
        out.values<float>()[0] = m_marker;
        return out;
    }
    std::deque<Error> errors;

private:
    std::string m_name;
    float m_marker;
    int* m_calls;
    bool m_slices;
};

Tensor one() {
    Tensor t = Tensor::allocate(DType::F32, {1, 1}).value();
    t.values<float>()[0] = 1.0f;
    return t;
}

struct Rig {
    int deviceCalls = 0, cpuCalls = 0;
    FakeBackend* device = nullptr;
    std::vector<std::string> logs;
    std::unique_ptr<BackendChooser> chooser;

    explicit Rig(bool withDevice) {
        auto gpu = std::make_unique<FakeBackend>("opencl-clblast", 2.0f, &deviceCalls, true);
        device = gpu.get();
        chooser = std::make_unique<BackendChooser>(
            withDevice ? std::move(gpu) : nullptr,
            std::make_unique<FakeBackend>("cpu-eigen", 1.0f, &cpuCalls, false),
            [this](const std::string& line) { logs.push_back(line); });
    }
    float run() {
        auto product = chooser->matmul(one(), one());
        return product ? product->values<float>()[0] : -1.0f;
    }
};

} // namespace

class TestBackendChooser : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void cpuOnly();
    void devicePreferred();
    void refusedTaskGoesToCpu();
    void badTaskIsNotRetried();
    void deviceFailureFailsTaskThenFallsBack();
    void callerStopIsNoDeviceFailure();
};

void TestBackendChooser::cpuOnly() {
    Rig rig(false);
    QCOMPARE(rig.chooser->name(), std::string_view("cpu-eigen"));
    QCOMPARE(rig.run(), 1.0f);
    QCOMPARE(rig.cpuCalls, 1);
    QVERIFY(!rig.chooser->deviceActive());
}

void TestBackendChooser::devicePreferred() {
    Rig rig(true);
    QCOMPARE(rig.chooser->name(), std::string_view("opencl-clblast"));
    QCOMPARE(rig.run(), 2.0f);
    QCOMPARE(rig.chooser->name(), std::string_view("opencl-clblast"));
    QCOMPARE(rig.cpuCalls, 0);
}

void TestBackendChooser::refusedTaskGoesToCpu() {
    Rig rig(true);
    rig.device->errors = {Error{ErrorCode::UnsupportedDtype, "no fp64"},
                          Error{ErrorCode::LimitExceeded, "too large"}};
    QCOMPARE(rig.run(), 1.0f);
    QCOMPARE(rig.chooser->name(), std::string_view("cpu-eigen"));
    QCOMPARE(rig.run(), 1.0f);
    // The device stays in use for tasks it can take.
    QCOMPARE(rig.run(), 2.0f);
    QCOMPARE(rig.chooser->name(), std::string_view("opencl-clblast"));
    QVERIFY(rig.chooser->deviceActive());
    QVERIFY(rig.logs.empty());
}

void TestBackendChooser::badTaskIsNotRetried() {
    Rig rig(true);
    rig.device->errors = {Error{ErrorCode::ShapeMismatch, "bad shapes"}};
    auto product = rig.chooser->matmul(one(), one());
    QVERIFY(!product.has_value());
    QCOMPARE(product.error().code, ErrorCode::ShapeMismatch);
    QCOMPARE(rig.cpuCalls, 0);
    QVERIFY(rig.chooser->deviceActive());
}

void TestBackendChooser::deviceFailureFailsTaskThenFallsBack() {
    Rig rig(true);
    rig.device->errors = {Error{ErrorCode::Internal, "opencl: CL_OUT_OF_RESOURCES (-5)"}};
    auto failed = rig.chooser->matmul(one(), one());
    // The failed task is an error (reported as task_error), never a CPU answer in disguise.
    QVERIFY(!failed.has_value());
    QCOMPARE(failed.error().code, ErrorCode::Internal);
    QCOMPARE(rig.cpuCalls, 0);
    QVERIFY(!rig.chooser->deviceActive());
    QCOMPARE(rig.logs.size(), std::size_t{1});
    QVERIFY(rig.logs[0].find("CL_OUT_OF_RESOURCES") != std::string::npos);
    // Every later task runs on the CPU, even ones the device would now answer.
    QCOMPARE(rig.run(), 1.0f);
    QCOMPARE(rig.run(), 1.0f);
    QCOMPARE(rig.deviceCalls, 1);
    QCOMPARE(rig.chooser->name(), std::string_view("cpu-eigen"));
}

void TestBackendChooser::callerStopIsNoDeviceFailure() {
    Rig rig(true);
    QVERIFY(rig.chooser->slicesInternally(one(), one()));
    goblin::compute::SliceHooks stop;
    stop.betweenSlices = [](double, double) { return false; };
    auto stopped = rig.chooser->matmul(one(), one(), stop);
    QVERIFY(!stopped.has_value());
    QCOMPARE(rig.cpuCalls, 0);
    QVERIFY(rig.chooser->deviceActive());
    QVERIFY(rig.logs.empty());
    QCOMPARE(rig.run(), 2.0f);
    // Once the device has failed, the CPU takes the calls and its slicing decides.
    rig.device->errors = {Error{ErrorCode::Internal, "lost device"}};
    QVERIFY(!rig.chooser->matmul(one(), one()).has_value());
    QVERIFY(!rig.chooser->slicesInternally(one(), one()));
}

QTEST_APPLESS_MAIN(TestBackendChooser)
#include "test_backend_chooser.moc"
