// How closely the volunteer's sliced matmul follows a CPU-time limit, without the network: one
// compute thread (1 BLAS thread) runs 2048² f32 tiles through slicedMatmul for a while at each
// duty %, and the thread's CPU time is read every 250 ms. Prints a table; asserts nothing.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <numeric>
#include <random>
#include <vector>

#include "goblin/compute/blas_kernel.hpp"
#include "goblin/compute/eigen_cpu_backend.hpp"
#include "sliced_matmul.hpp"

using namespace goblin;
using namespace goblin::volunteer;

namespace {

double threadCpuSeconds() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

core::Tensor randomMatrix(std::int64_t rows, std::int64_t cols) {
    auto tensor = core::Tensor::allocate(core::DType::F32, {rows, cols});
    std::mt19937 random(1);
    std::uniform_real_distribution<float> value(-1, 1);
    for (float& x : tensor->values<float>())
        x = value(random);
    return std::move(*tensor);
}

} // namespace

int main(int argc, char** argv) {
    compute::restartWithBetterBlasKernel(argv); // the kernel goblin-volunteer runs
    const double seconds = argc > 1 ? std::atof(argv[1]) : 10.0;
    compute::EigenCpuBackend backend({1});
    const auto a = randomMatrix(2048, 2048), b = randomMatrix(2048, 2048);
    std::printf("sliced matmul, 1 thread, %.0f s per limit, CPU %% of one core per 250 ms window\n",
                seconds);
    std::printf("| limit %% | mean %% | stdev %% | min %% | max %% | slice ms |\n");
    std::printf("| --: | --: | --: | --: | --: | --: |\n");
    for (int duty : {25, 50, 75, 100}) {
        ComputeGate gate;
        gate.setPlan({.run = true, .dutyPercent = duty});
        SliceTuning tuning;
        int slices = 0;
        SlicedRun hooks;
        hooks.progress = [&](double) { ++slices; };
        std::vector<double> windows;
        using Clock = std::chrono::steady_clock;
        const auto start = Clock::now();
        auto windowStart = start;
        double windowCpu = threadCpuSeconds();
        double busy = 0;
        while (Clock::now() - start < std::chrono::duration<double>(seconds)) {
            auto result = slicedMatmul(backend, gate, tuning, a, b, hooks);
            busy += (*result)->busySeconds;
            // Windows are closed between tiles, so a window is ≥ 250 ms, never cut mid-slice.
            const auto now = Clock::now();
            const double wall = std::chrono::duration<double>(now - windowStart).count();
            if (wall >= 0.25) {
                const double cpu = threadCpuSeconds();
                windows.push_back(100.0 * (cpu - windowCpu) / wall);
                windowStart = now;
                windowCpu = cpu;
            }
        }
        const double mean = std::accumulate(windows.begin(), windows.end(), 0.0) / windows.size();
        double var = 0;
        for (double w : windows)
            var += (w - mean) * (w - mean);
        const auto [low, high] = std::minmax_element(windows.begin(), windows.end());
        std::printf("| %d | %.1f | %.1f | %.1f | %.1f | %.0f |\n", duty, mean,
                    std::sqrt(var / windows.size()), *low, *high, 1000.0 * busy / slices);
    }
    return 0;
}
