#include "goblin/compute/blas_kernel.hpp"

#include <array>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

#include <unistd.h>

// From OpenBLAS; declared here because cblas.h clashes with Eigen's BLAS declarations.
extern "C" char* openblas_get_corename(void);

namespace goblin::compute {
namespace {

constexpr const char* kCoreTypeVariable = "OPENBLAS_CORETYPE";

// OpenBLAS's x86-64 core names (dynamic.c's corename table) by the vector level they need.
constexpr std::array<std::pair<std::string_view, VectorLevel>, 25> kCoreLevels{{
    {"Katmai", VectorLevel::Baseline},
    {"Coppermine", VectorLevel::Baseline},
    {"Northwood", VectorLevel::Baseline},
    {"Prescott", VectorLevel::Baseline},
    {"Banias", VectorLevel::Baseline},
    {"Atom", VectorLevel::Baseline},
    {"Core2", VectorLevel::Baseline},
    {"Penryn", VectorLevel::Baseline},
    {"Dunnington", VectorLevel::Baseline},
    {"Nehalem", VectorLevel::Baseline},
    {"Athlon", VectorLevel::Baseline},
    {"Opteron", VectorLevel::Baseline},
    {"Opteron_SSE3", VectorLevel::Baseline},
    {"Barcelona", VectorLevel::Baseline},
    {"Nano", VectorLevel::Baseline},
    {"Bobcat", VectorLevel::Baseline},
    {"Sandybridge", VectorLevel::Avx},
    {"Bulldozer", VectorLevel::Avx},
    {"Piledriver", VectorLevel::Avx},
    {"Steamroller", VectorLevel::Avx},
    {"Excavator", VectorLevel::Avx2},
    {"Haswell", VectorLevel::Avx2},
    {"Zen", VectorLevel::Avx2},
    {"SkylakeX", VectorLevel::Avx512},
    {"Cooperlake", VectorLevel::Avx512},
}};

// The kernel asked for at each level: the one OpenBLAS itself picks for the newest CPUs it knows.
std::string_view kernelFor(VectorLevel level) {
    switch (level) {
    case VectorLevel::Avx512:
        return "SkylakeX";
    case VectorLevel::Avx2:
        return "Haswell";
    case VectorLevel::Avx:
        return "Sandybridge";
    case VectorLevel::Baseline:
        break;
    }
    return "Prescott";
}

} // namespace

VectorLevel cpuVectorLevel() {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    // SkylakeX's kernels use AVX-512 F, BW, DQ and VL; __builtin_cpu_supports also checks that
    // the operating system saves the registers.
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return VectorLevel::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return VectorLevel::Avx2;
    if (__builtin_cpu_supports("avx"))
        return VectorLevel::Avx;
#endif
    return VectorLevel::Baseline;
}

std::optional<VectorLevel> blasKernelLevel(std::string_view coreName) {
    for (const auto& [name, level] : kCoreLevels)
        if (name == coreName)
            return level;
    return std::nullopt;
}

std::optional<std::string> betterBlasKernel(std::string_view current, VectorLevel cpu) {
    const auto level = blasKernelLevel(current);
    if (!level || *level >= cpu)
        return std::nullopt;
    return std::string(kernelFor(cpu));
}

std::string currentBlasKernel() {
    const char* name = openblas_get_corename();
    return name ? name : "unknown";
}

void restartWithBetterBlasKernel(char** argv) {
    if (std::getenv(kCoreTypeVariable) != nullptr)
        return;
    const auto better = betterBlasKernel(currentBlasKernel(), cpuVectorLevel());
    if (!better)
        return;
    // The program's own path, not /proc/self/exe itself: exec names the process after the path
    // it was given ("exe" in ps and top otherwise).
    std::error_code error;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
    if (error || ::setenv(kCoreTypeVariable, better->c_str(), 1) != 0)
        return;
    ::execv(self.c_str(), argv);
    // exec failed (the binary was replaced since, say): go on with the kernel we have.
    ::unsetenv(kCoreTypeVariable);
}

} // namespace goblin::compute
