// GPU backend: one OpenCL device, one context and command queue, GEMM through CLBlast dispatched
// in time-budgeted slices, and our finite-scan kernel as a gate on every product. Created and used
// by one compute thread; a caller pauses it through the SliceHooks of each matmul.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "goblin/compute/backend.hpp"
#include "goblin/compute/opencl_devices.hpp"

namespace goblin::compute {

// CLBlast kernel parameters by name ("MWG" → 64, …), as its tuners and OverrideParameters use them.
using GemmParameters = std::map<std::string, std::size_t>;

struct OpenClBackendOptions {
    int device = 0;            // index into listOpenClDevices() ("gpu0" → 0)
    double sliceSeconds = 0.5; // budget for one kernel; the GEMM is cut to fit it
    // Caps the device's global memory and largest allocation (0: the device's own values).
    std::uint64_t memoryCapBytes = 0;
    // Rate used for slicing before anything is measured (0: measure a small GEMM at creation).
    double assumedGflops = 0.0;
};

class OpenClBackend final : public Backend {
public:
    // Opens the device, compiles our kernels and measures its GEMM rate. Errors: NotFound for a
    // device index that does not exist, Internal for driver failures.
    [[nodiscard]] static Expected<std::unique_ptr<OpenClBackend>>
    create(const OpenClBackendOptions& options);
    ~OpenClBackend() override;
    OpenClBackend(const OpenClBackend&) = delete;
    OpenClBackend& operator=(const OpenClBackend&) = delete;

    std::string_view name() const override { return "opencl-clblast"; }
    // f32 always, f64 where the device has fp64 (UnsupportedDtype otherwise). A product too large
    // for the device is refused with LimitExceeded before anything is allocated on it. A product
    // with NaN/Inf from finite inputs is a device fault (Internal), never returned as a result.
    // `hooks` are called after every GEMM slice; a stop makes it an Internal error.
    using Backend::matmul;
    Expected<core::Tensor> matmul(const core::Tensor& a, const core::Tensor& b,
                                  const SliceHooks& hooks) override;
    // True for every product the device takes (false when it would refuse it: no fp64, too big).
    bool slicesInternally(const core::Tensor& a, const core::Tensor& b) const override;

    const OpenClDeviceInfo& device() const;
    double sliceSeconds() const;
    void setSliceSeconds(double seconds);
    // Current GEMM rate estimate used for slicing, GFLOP/s (updated after each long product).
    double estimatedGflops() const;
    // Slices the last matmul was cut into.
    std::size_t lastSliceCount() const;
    // Device buffers allocated so far (for tests: a refused task allocates none).
    std::int64_t buffersAllocated() const;
    // Runs our finite-scan kernel on a tensor's values (f32/f64) on the device.
    [[nodiscard]] Expected<std::uint64_t> countNonFinite(const core::Tensor& values);

    // Overrides CLBlast's Xgemm parameters for this device (CLBlast keys them by device, so every
    // context of the process sees them); empty → CLBlast's own values. A bad set shows as an
    // error of the next GEMM, not here.
    [[nodiscard]] Expected<void> setGemmParameters(core::DType dtype, const GemmParameters& values);
    // CLBlast's own Xgemm parameters for this device (its database or defaults).
    const GemmParameters& defaultGemmParameters(core::DType dtype) const;
    // Best seconds of `repeats` unsliced n×n×n GEMMs on device-resident data (kernel time only;
    // the first call, which may compile, is not counted).
    [[nodiscard]] Expected<double> timeGemm(core::DType dtype, std::int64_t n, int repeats);

private:
    struct State;
    explicit OpenClBackend(std::unique_ptr<State> state);
    std::unique_ptr<State> m_state;
};

} // namespace goblin::compute
