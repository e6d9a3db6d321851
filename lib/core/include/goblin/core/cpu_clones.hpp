// Function attributes that compile a hot loop several times, for the baseline x86-64 and for newer
// instruction sets, the copy picked at load time for the CPU it runs on (GCC's target_clones).
// Nothing elsewhere than on x86-64 with GCC or Clang.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
// AVX2 + FMA and the baseline.
#define GOBLIN_CPU_CLONES [[gnu::target_clones("arch=x86-64-v3", "default")]]
// AVX-512 as well, for loops whose wider vectors pay for a third copy.
#define GOBLIN_CPU_CLONES_WITH_AVX512                                                              \
    [[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]]
#else
#define GOBLIN_CPU_CLONES
#define GOBLIN_CPU_CLONES_WITH_AVX512
#endif
