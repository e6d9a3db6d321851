// GFLOP/s of the compute backends on the same square GEMMs: the CPU backend (Eigen, which hands
// large products to OpenBLAS) against OpenCL/CLBlast on each OpenCL device, f32 and f64. The
// OpenCL figures are whole backend calls (upload, sliced GEMM, NaN/Inf scan, download); the first
// call per dtype (kernel compilation) is reported apart from the best warm call.
// "calibrated" rows follow a bounded parameter search (goblin-volunteer --calibrate's, same code).
// Usage: goblin-bench-backends [N ...] [--threads T] [--device D] [--repeats R]
//                              [--calibrate-seconds S]   (0: skip the calibrated rows)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "goblin/compute/blas_kernel.hpp"
#include "goblin/compute/eigen_cpu_backend.hpp"
#include "goblin/compute/gemm_calibration.hpp"
#include "goblin/compute/opencl_backend.hpp"

using namespace goblin;
using Clock = std::chrono::steady_clock;

namespace {

core::Tensor randomMatrix(core::DType dtype, std::int64_t n, std::mt19937_64& random) {
    auto tensor = core::Tensor::allocate(dtype, {n, n}).value();
    std::uniform_real_distribution<double> uniform(0.25, 1.0);
    for (std::int64_t i = 0; i < tensor.elementCount(); ++i) {
        const double value = (random() & 1) ? uniform(random) : -uniform(random);
        if (dtype == core::DType::F32)
            tensor.values<float>()[static_cast<std::size_t>(i)] = static_cast<float>(value);
        else
            tensor.values<double>()[static_cast<std::size_t>(i)] = value;
    }
    return tensor;
}

double secondsOf(compute::Backend& backend, const core::Tensor& a, const core::Tensor& b) {
    const auto started = Clock::now();
    auto product = backend.matmul(a, b);
    if (!product) {
        std::fprintf(stderr, "%s: %s\n", std::string(backend.name()).c_str(),
                     product.error().describe().c_str());
        return -1;
    }
    return std::chrono::duration<double>(Clock::now() - started).count();
}

struct Timing {
    double first = -1, best = -1;
};

Timing timeBackend(compute::Backend& backend, const core::Tensor& a, const core::Tensor& b,
                   int repeats) {
    Timing timing;
    timing.first = secondsOf(backend, a, b);
    if (timing.first < 0)
        return timing;
    timing.best = 1e30;
    for (int i = 0; i < repeats; ++i)
        timing.best = std::min(timing.best, secondsOf(backend, a, b));
    return timing;
}

void printRow(const char* backend, const char* dtype, std::int64_t n, const Timing& t) {
    const double flops = 2.0 * double(n) * double(n) * double(n);
    if (t.best <= 0) {
        std::printf("%-28s %-5s %6lld %12s %10s %10s\n", backend, dtype, static_cast<long long>(n),
                    "failed", "-", "-");
        return;
    }
    std::printf("%-28s %-5s %6lld %12.3f %10.3f %10.1f\n", backend, dtype,
                static_cast<long long>(n), t.first, t.best, flops / t.best / 1e9);
    std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
    compute::restartWithBetterBlasKernel(argv); // the kernel goblin-volunteer runs
    std::vector<std::int64_t> sizes;
    int threads = 0, device = 0, repeats = 2;
    double calibrateSeconds = 30.0;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--threads" && i + 1 < argc)
            threads = std::atoi(argv[++i]);
        else if (arg == "--device" && i + 1 < argc)
            device = std::atoi(argv[++i]);
        else if (arg == "--calibrate-seconds" && i + 1 < argc)
            calibrateSeconds = std::atof(argv[++i]);
        else if (arg == "--repeats" && i + 1 < argc)
            repeats = std::max(1, std::atoi(argv[++i]));
        else if (const long long n = std::atoll(arg.c_str()); n > 0)
            sizes.push_back(n);
        else {
            std::fprintf(stderr, "usage: goblin-bench-backends [N ...] [--threads T] [--device D] "
                                 "[--calibrate-seconds S] [--repeats R]\n");
            return arg == "--help" || arg == "-h" ? 0 : 2;
        }
    }
    if (sizes.empty())
        sizes = {1024, 2048};
    (void)compute::prepareOpenClCache(std::filesystem::temp_directory_path() /
                                      "goblin-bench-opencl");

    compute::EigenCpuBackend cpu(compute::CpuBackendOptions{threads});
    const auto createStarted = Clock::now();
    compute::OpenClBackendOptions options;
    options.device = device;
    auto opencl = compute::OpenClBackend::create(options);
    const double createSeconds =
        std::chrono::duration<double>(Clock::now() - createStarted).count();
    if (opencl)
        std::printf("OpenCL device %d: %s (%s); backend start-up %.2f s (context, kernels, "
                    "first CLBlast compile, rate probe)\n",
                    device, (*opencl)->device().name.c_str(),
                    (*opencl)->device().driverVersion.c_str(), createSeconds);
    else
        std::printf("no OpenCL backend: %s\n", opencl.error().describe().c_str());
    std::printf("CPU backend: %d thread(s)\n\n", cpu.threads());
    std::printf("%-28s %-5s %6s %12s %10s %10s\n", "backend", "dtype", "N", "first call s",
                "best s", "GFLOP/s");
    std::mt19937_64 random(7);
    std::string notes;
    for (core::DType dtype : {core::DType::F32, core::DType::F64}) {
        const char* dtypeName = dtype == core::DType::F32 ? "f32" : "f64";
        const bool onDevice = opencl && (dtype == core::DType::F32 || (*opencl)->device().fp64);
        std::vector<std::pair<core::Tensor, core::Tensor>> inputs;
        for (std::int64_t n : sizes) {
            inputs.emplace_back(randomMatrix(dtype, n, random), randomMatrix(dtype, n, random));
            const auto& [a, b] = inputs.back();
            printRow("cpu-eigen (OpenBLAS)", dtypeName, n, timeBackend(cpu, a, b, repeats));
            if (onDevice)
                printRow("opencl-clblast (untuned)", dtypeName, n,
                         timeBackend(**opencl, a, b, repeats));
        }
        if (!onDevice || calibrateSeconds <= 0)
            continue;
        compute::CalibrationOptions calibration;
        calibration.timeLimitSeconds = calibrateSeconds;
        const auto started = Clock::now();
        auto result = compute::calibrateGemm(**opencl, dtype, calibration);
        if (!result) {
            notes +=
                std::string(dtypeName) + " calibration failed: " + result.error().message + "\n";
            continue;
        }
        char note[256];
        std::snprintf(note, sizeof note,
                      "%s calibration: %.0f s, %d candidates (%d refused, %d wrong), kernel-only "
                      "N=1024 %.1f -> %.1f GFLOP/s\n",
                      dtypeName, std::chrono::duration<double>(Clock::now() - started).count(),
                      result->tried, result->failed, result->wrong, result->defaultGflops,
                      result->bestGflops);
        notes += note;
        for (const auto& [a, b] : inputs)
            printRow("opencl-clblast (calibrated)", dtypeName, a.shape()[0],
                     timeBackend(**opencl, a, b, repeats));
        (void)(*opencl)->setGemmParameters(dtype, {});
    }
    std::printf("\n%s", notes.c_str());
    return 0;
}
