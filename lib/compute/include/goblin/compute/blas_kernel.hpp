// Which OpenBLAS kernel this process runs, and a better one where OpenBLAS guessed low.
//
// OpenBLAS (built DYNAMIC_ARCH, as Debian's is) picks its kernels from the CPU's family and model
// when it loads. A release older than the CPU does not know the model and falls back to its
// oldest x86-64 kernel: Debian 12's 0.3.21 runs Prescott (SSE3) on a CPU with AVX-512, about
// five times slower than its SkylakeX kernel. OPENBLAS_CORETYPE overrides the guess, but only
// before the library loads, so a program that wants the better kernel sets it and runs itself
// again (restartWithBetterBlasKernel).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace goblin::compute {

// What the CPU's vector units allow, as OpenBLAS's x86-64 kernels are grouped.
enum class VectorLevel { Baseline = 0, Avx = 1, Avx2 = 2, Avx512 = 3 };

// This CPU's level (features the CPU and the operating system both enable); Baseline off x86-64.
VectorLevel cpuVectorLevel();

// The level an OpenBLAS core name needs (its openblas_get_corename() spelling); nullopt for a
// name this table does not know.
std::optional<VectorLevel> blasKernelLevel(std::string_view coreName);

// The OpenBLAS core to ask for when `current` runs below what `cpu` allows; nullopt when it
// does not (or when `current` is a name not in the table: then it is left alone).
std::optional<std::string> betterBlasKernel(std::string_view current, VectorLevel cpu);

// The kernel OpenBLAS runs in this process (openblas_get_corename()).
std::string currentBlasKernel();

// When OPENBLAS_CORETYPE is unset and the current kernel is below this CPU's level: sets it to
// the better kernel and replaces this process with itself (the program /proc/self/exe names,
// same arguments), so
// it does not return. Returns (and changes nothing) when there is nothing better, when the
// variable was set by whoever started us (their choice stands), or when exec fails; the second
// run finds the variable set and goes on.
void restartWithBetterBlasKernel(char** argv);

} // namespace goblin::compute
