// Times the volunteer backend's own GEMM called directly (no network), best of several runs.
// Usage: goblin-bench-gemm N [N ...] [--threads T] [--dtype f32|f64]; prints one JSON line per N.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "goblin/compute/blas_kernel.hpp"
#include "goblin/compute/eigen_cpu_backend.hpp"

using namespace goblin;

namespace {

template <class T> core::Tensor randomMatrix(std::int64_t n, std::mt19937_64& random) {
    auto tensor =
        core::Tensor::allocate(sizeof(T) == 4 ? core::DType::F32 : core::DType::F64, {n, n});
    std::normal_distribution<double> normal;
    for (T& value : tensor->values<T>())
        value = static_cast<T>(normal(random));
    return std::move(*tensor);
}

template <class T> double bestSeconds(compute::Backend& backend, std::int64_t n, int repeats) {
    std::mt19937_64 random(42);
    const core::Tensor a = randomMatrix<T>(n, random);
    const core::Tensor b = randomMatrix<T>(n, random);
    (void)backend.matmul(a, b); // warm-up: thread pools, page faults
    double best = 1e30;
    for (int i = 0; i < repeats; ++i) {
        const auto started = std::chrono::steady_clock::now();
        auto product = backend.matmul(a, b);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (!product) {
            std::fprintf(stderr, "matmul failed: %s\n", product.error().describe().c_str());
            return -1;
        }
        best = std::min(best, seconds);
    }
    return best;
}

} // namespace

int main(int argc, char** argv) {
    compute::restartWithBetterBlasKernel(argv); // the kernel goblin-volunteer runs
    std::vector<std::int64_t> sizes;
    int threads = 0;
    std::string dtype = "f32";
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--threads" && i + 1 < argc)
            threads = std::stoi(argv[++i]);
        else if (arg == "--dtype" && i + 1 < argc)
            dtype = argv[++i];
        else
            sizes.push_back(std::stoll(arg));
    }
    if (sizes.empty())
        sizes = {1024, 2048, 4096};
    compute::EigenCpuBackend backend(compute::CpuBackendOptions{threads});
    for (std::int64_t n : sizes) {
        const int repeats = n >= 4096 ? 2 : 3;
        const double seconds = dtype == "f64" ? bestSeconds<double>(backend, n, repeats)
                                              : bestSeconds<float>(backend, n, repeats);
        const double gflops = 2.0 * double(n) * double(n) * double(n) / seconds / 1e9;
        std::printf("{\"n\": %lld, \"dtype\": \"%s\", \"threads\": %d, \"seconds\": %.6f, "
                    "\"gflops\": %.1f, \"blas_kernel\": \"%s\"}\n",
                    static_cast<long long>(n), dtype.c_str(), backend.threads(), seconds, gflops,
                    compute::currentBlasKernel().c_str());
        std::fflush(stdout);
    }
    return 0;
}
