// Function attributes that compile a hot loop several times, for the baseline x86-64 and for newer
// instruction sets, the copy picked at load time for the CPU it runs on (GCC's target_clones).
// Nothing elsewhere than on x86-64 with GCC or Clang.
#pragma once

#include <atomic>

#if defined(__x86_64__) && defined(__GNUC__)
// AVX2 + FMA and the baseline.
#define GOBLIN_CPU_CLONES [[gnu::target_clones("arch=x86-64-v3", "default")]]
// AVX-512 as well, for loops whose wider vectors pay for a third copy.
#define GOBLIN_CPU_CLONES_WITH_AVX512                                                              \
    [[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]]
// One function compiled for AVX-512 only: call it where avx512Present() says the CPU has it.
#define GOBLIN_AVX512_ONLY [[gnu::target("arch=x86-64-v4")]]
#else
#define GOBLIN_CPU_CLONES
#define GOBLIN_CPU_CLONES_WITH_AVX512
#define GOBLIN_AVX512_ONLY
#endif

namespace goblin::core {

// Whether avx512Present() may say yes (true unless a test turned it off to run the other path on
// such a processor too).
inline std::atomic<bool>& avx512Allowed() {
    static std::atomic<bool> allowed{true};
    return allowed;
}

// Whether this processor runs x86-64-v4 code (AVX-512 F, BW, CD, DQ, VL) and its use is allowed:
// for loops whose 64-byte vectors GCC's generic vector types do not get from target_clones alone.
inline bool avx512Present() {
#if defined(__x86_64__) && defined(__GNUC__)
    static const bool present = __builtin_cpu_supports("x86-64-v4");
    return present && avx512Allowed().load(std::memory_order_relaxed);
#else
    return false;
#endif
}

} // namespace goblin::core
