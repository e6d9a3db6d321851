#include "goblin/compute/opencl_backend.hpp"

#include <chrono>
#include <optional>
#include <string>

#include "cl_error.hpp"
#include "device_lookup.hpp"
#include "finite_scan.hpp"
#include "gemm_parameters.hpp"
#include "goblin/compute/gemm_slicing.hpp"
#include "matmul_validation.hpp"
#include "sliced_gemm.hpp"

namespace goblin::compute {

namespace cl_ = opencl;

struct OpenClBackend::State {
    OpenClBackendOptions options;
    OpenClDeviceInfo info;
    DeviceMemoryLimits limits;
    cl::Device device;
    cl::Context context;
    cl::CommandQueue queue;
    std::optional<cl_::FiniteScan> scanF32;
    std::optional<cl_::FiniteScan> scanF64;
    GemmParameters defaultsF32;
    GemmParameters defaultsF64;
    double flopsPerSecond = 1e9;
    std::size_t lastSlices = 0;
    std::int64_t buffers = 0;
};

namespace {

using Clock = std::chrono::steady_clock;

// A device buffer of `bytes`, filled from `source` when given; counts into `allocated`.
Expected<cl::Buffer> uploadBuffer(const cl::Context& context, cl::CommandQueue& queue,
                                  std::int64_t& allocated, std::size_t bytes, const void* source) {
    cl_int status = CL_SUCCESS;
    cl::Buffer buffer(context, CL_MEM_READ_WRITE, bytes, nullptr, &status);
    if (status != CL_SUCCESS)
        return tl::unexpected(cl_::clError(status, "clCreateBuffer"));
    ++allocated;
    if (source) {
        status = queue.enqueueWriteBuffer(buffer, CL_TRUE, 0, bytes, source);
        if (status != CL_SUCCESS)
            return tl::unexpected(cl_::clError(status, "clEnqueueWriteBuffer"));
    }
    return buffer;
}

// Times one small GEMM (after a first call that compiles CLBlast's kernels) to seed slicing.
Expected<double> measureFlopsPerSecond(const cl::Context& context, cl::CommandQueue& queue,
                                       std::int64_t& allocated) {
    constexpr std::int64_t kSize = 256;
    const std::size_t bytes = kSize * kSize * sizeof(float);
    std::vector<float> ones(kSize * kSize, 1.0f);
    auto a = uploadBuffer(context, queue, allocated, bytes, ones.data());
    auto c = uploadBuffer(context, queue, allocated, bytes, nullptr);
    if (!a || !c)
        return tl::unexpected(!a ? a.error() : c.error());
    double seconds = 0.0;
    for (int round = 0; round < 2; ++round) {
        const auto started = Clock::now();
        auto run = cl_::runGemmSlice(queue, core::DType::F32, *a, *a, *c, kSize, kSize,
                                     GemmSlice{0, kSize, 0, kSize});
        if (!run)
            return tl::unexpected(run.error());
        seconds = std::chrono::duration<double>(Clock::now() - started).count();
    }
    return 2.0 * kSize * kSize * kSize / std::max(seconds, 1e-6);
}

} // namespace

OpenClBackend::OpenClBackend(std::unique_ptr<State> state) : m_state(std::move(state)) {}
OpenClBackend::~OpenClBackend() = default;

Expected<std::unique_ptr<OpenClBackend>>
OpenClBackend::create(const OpenClBackendOptions& options) {
    try {
        auto found = cl_::findOpenClDevice(options.device);
        if (!found)
            return tl::unexpected(found.error());
        auto state = std::make_unique<State>();
        state->options = options;
        state->info = found->info;
        state->device = found->device;
        state->limits = {state->info.globalMemoryBytes, state->info.maxAllocBytes};
        if (options.memoryCapBytes > 0) {
            state->limits.globalBytes = std::min(state->limits.globalBytes, options.memoryCapBytes);
            state->limits.maxAllocBytes =
                std::min(state->limits.maxAllocBytes, options.memoryCapBytes);
        }
        cl_int status = CL_SUCCESS;
        state->context = cl::Context(state->device, nullptr, nullptr, nullptr, &status);
        if (status != CL_SUCCESS)
            return tl::unexpected(cl_::clError(status, "clCreateContext"));
        state->queue = cl::CommandQueue(state->context, state->device, 0, &status);
        if (status != CL_SUCCESS)
            return tl::unexpected(cl_::clError(status, "clCreateCommandQueue"));
        auto scan = cl_::FiniteScan::build(state->context, state->device, core::DType::F32);
        if (!scan)
            return tl::unexpected(scan.error());
        state->scanF32.emplace(std::move(*scan));
        if (state->info.fp64) {
            auto scan64 = cl_::FiniteScan::build(state->context, state->device, core::DType::F64);
            if (!scan64)
                return tl::unexpected(scan64.error());
            state->scanF64.emplace(std::move(*scan64));
        }
        if (auto got =
                cl_::retrieveXgemmParameters(state->device, core::DType::F32, state->defaultsF32);
            !got)
            return tl::unexpected(got.error());
        if (state->info.fp64) {
            if (auto got = cl_::retrieveXgemmParameters(state->device, core::DType::F64,
                                                        state->defaultsF64);
                !got)
                return tl::unexpected(got.error());
        }
        if (options.assumedGflops > 0) {
            state->flopsPerSecond = options.assumedGflops * 1e9;
        } else {
            auto rate = measureFlopsPerSecond(state->context, state->queue, state->buffers);
            if (!rate)
                return tl::unexpected(rate.error());
            state->flopsPerSecond = *rate;
        }
        return std::unique_ptr<OpenClBackend>(new OpenClBackend(std::move(state)));
    } catch (const std::exception& error) {
        return makeError(ErrorCode::Internal, std::string("opencl backend: ") + error.what());
    }
}

const OpenClDeviceInfo& OpenClBackend::device() const {
    return m_state->info;
}
double OpenClBackend::sliceSeconds() const {
    return m_state->options.sliceSeconds;
}
void OpenClBackend::setSliceSeconds(double seconds) {
    m_state->options.sliceSeconds = seconds;
}
double OpenClBackend::estimatedGflops() const {
    return m_state->flopsPerSecond / 1e9;
}
std::size_t OpenClBackend::lastSliceCount() const {
    return m_state->lastSlices;
}
std::int64_t OpenClBackend::buffersAllocated() const {
    return m_state->buffers;
}

Expected<std::uint64_t> OpenClBackend::countNonFinite(const core::Tensor& values) {
    try {
        if (!core::isFloatingPoint(values.dtype()))
            return makeError(ErrorCode::UnsupportedDtype, "the finite scan takes f32 or f64");
        auto& scan = values.dtype() == core::DType::F32 ? m_state->scanF32 : m_state->scanF64;
        if (!scan)
            return makeError(ErrorCode::UnsupportedDtype, "this device has no double precision");
        if (values.byteSize() == 0)
            return std::uint64_t{0};
        auto buffer = uploadBuffer(m_state->context, m_state->queue, m_state->buffers,
                                   values.byteSize(), values.bytes().data());
        if (!buffer)
            return tl::unexpected(buffer.error());
        return scan->countNonFinite(m_state->queue, *buffer,
                                    static_cast<std::uint64_t>(values.elementCount()));
    } catch (const std::exception& error) {
        return makeError(ErrorCode::Internal, std::string("opencl finite scan: ") + error.what());
    }
}

bool OpenClBackend::slicesInternally(const core::Tensor& a, const core::Tensor& b) const {
    if (!validateMatmul(a, b))
        return false;
    const core::DType dtype = a.dtype();
    if (dtype == core::DType::F64 && !m_state->info.fp64)
        return false;
    const std::int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
    return m == 0 || n == 0 || k == 0 || checkGemmFits(m_state->limits, dtype, m, k, n).has_value();
}

Expected<core::Tensor> OpenClBackend::matmul(const core::Tensor& a, const core::Tensor& b,
                                             const SliceHooks& hooks) {
    try {
        State& state = *m_state;
        if (auto valid = validateMatmul(a, b); !valid)
            return tl::unexpected(valid.error());
        const core::DType dtype = a.dtype();
        if (dtype == core::DType::F64 && !state.info.fp64)
            return makeError(ErrorCode::UnsupportedDtype,
                             "OpenCL device " + state.info.name + " has no double precision");
        const std::int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
        auto c = core::Tensor::allocate(dtype, {m, n});
        if (!c)
            return c;
        state.lastSlices = 0;
        if (m == 0 || n == 0)
            return c;
        if (k == 0) {
            std::fill(c->bytes().begin(), c->bytes().end(), std::byte{0});
            return c;
        }
        // Refuse what cannot fit before touching device memory.
        if (auto fits = checkGemmFits(state.limits, dtype, m, k, n); !fits)
            return tl::unexpected(fits.error());
        auto bufferA =
            uploadBuffer(state.context, state.queue, state.buffers, a.byteSize(), a.bytes().data());
        if (!bufferA)
            return tl::unexpected(bufferA.error());
        auto bufferB =
            uploadBuffer(state.context, state.queue, state.buffers, b.byteSize(), b.bytes().data());
        if (!bufferB)
            return tl::unexpected(bufferB.error());
        auto bufferC =
            uploadBuffer(state.context, state.queue, state.buffers, c->byteSize(), nullptr);
        if (!bufferC)
            return tl::unexpected(bufferC.error());

        const SlicePolicy policy{state.flopsPerSecond, state.options.sliceSeconds};
        const auto slices = planGemmSlices(m, k, n, policy);
        state.lastSlices = slices.size();
        const auto started = Clock::now();
        auto ran = cl_::runSlicedGemm(state.queue, dtype, *bufferA, *bufferB, *bufferC, m, k, n,
                                      slices, hooks);
        if (!ran)
            return tl::unexpected(ran.error());
        const double busy =
            std::chrono::duration<double>(Clock::now() - started).count() - ran->hookSeconds;
        // Long products measure the device better than the start-up probe: follow them.
        if (busy >= 0.05)
            state.flopsPerSecond = 0.5 * state.flopsPerSecond +
                                   0.5 * (2.0 * static_cast<double>(m) * static_cast<double>(k) *
                                          static_cast<double>(n) / busy);

        auto& scan = dtype == core::DType::F32 ? state.scanF32 : state.scanF64;
        auto bad = scan->countNonFinite(state.queue, *bufferC, static_cast<std::uint64_t>(m * n));
        if (!bad)
            return tl::unexpected(bad.error());
        if (*bad != 0)
            return makeError(ErrorCode::Internal,
                             "opencl: the device produced " + std::to_string(*bad) +
                                 " NaN/Inf value(s) in a " + shapeText(c->shape()) + " product");
        const cl_int status =
            state.queue.enqueueReadBuffer(*bufferC, CL_TRUE, 0, c->byteSize(), c->bytes().data());
        if (status != CL_SUCCESS)
            return tl::unexpected(cl_::clError(status, "clEnqueueReadBuffer(C)"));
        return c;
    } catch (const std::exception& error) {
        return makeError(ErrorCode::Internal, std::string("opencl matmul: ") + error.what());
    }
}

const GemmParameters& OpenClBackend::defaultGemmParameters(core::DType dtype) const {
    return dtype == core::DType::F64 ? m_state->defaultsF64 : m_state->defaultsF32;
}

Expected<void> OpenClBackend::setGemmParameters(core::DType dtype, const GemmParameters& values) {
    if (dtype == core::DType::F64 && !m_state->info.fp64)
        return makeError(ErrorCode::UnsupportedDtype, "this device has no double precision");
    const GemmParameters& chosen = values.empty() ? defaultGemmParameters(dtype) : values;
    return cl_::overrideXgemmParameters(m_state->device, dtype, chosen);
}

Expected<double> OpenClBackend::timeGemm(core::DType dtype, std::int64_t n, int repeats) {
    try {
        State& state = *m_state;
        if (dtype == core::DType::F64 && !state.info.fp64)
            return makeError(ErrorCode::UnsupportedDtype, "this device has no double precision");
        if (auto fits = checkGemmFits(state.limits, dtype, n, n, n); !fits)
            return tl::unexpected(fits.error());
        const std::size_t bytes = static_cast<std::size_t>(n * n) * core::itemSize(dtype);
        auto a = uploadBuffer(state.context, state.queue, state.buffers, bytes, nullptr);
        auto c = uploadBuffer(state.context, state.queue, state.buffers, bytes, nullptr);
        if (!a || !c)
            return tl::unexpected(!a ? a.error() : c.error());
        // Values do not change the time; zeros keep them finite.
        const cl_int filled = state.queue.enqueueFillBuffer(*a, cl_uchar{0}, 0, bytes);
        if (filled != CL_SUCCESS)
            return tl::unexpected(cl_::clError(filled, "clEnqueueFillBuffer"));
        double best = 1e30;
        for (int round = 0; round <= repeats; ++round) {
            const auto started = Clock::now();
            auto ran =
                cl_::runGemmSlice(state.queue, dtype, *a, *a, *c, n, n, GemmSlice{0, n, 0, n});
            if (!ran)
                return tl::unexpected(ran.error());
            if (round > 0)
                best =
                    std::min(best, std::chrono::duration<double>(Clock::now() - started).count());
        }
        return best;
    } catch (const std::exception& error) {
        return makeError(ErrorCode::Internal, std::string("opencl timeGemm: ") + error.what());
    }
}

} // namespace goblin::compute
