/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11; Random123),
 * the counter-based generator behind dropout_mask (docs/ops.md). Plain C that compiles as C, C++
 * and OpenCL C alike, so every backend computes the same bits: no std::, no templates, 32/64-bit
 * unsigned arithmetic only. Pure functions; any thread or work-item. */
#ifndef GOBLIN_PHILOX_H
#define GOBLIN_PHILOX_H

#ifdef __OPENCL_VERSION__
typedef uint uint32_t;
typedef ulong uint64_t;
#else
#include <stdint.h>
#endif

#define GOBLIN_PHILOX_M0 0xD2511F53u
#define GOBLIN_PHILOX_M1 0xCD9E8D57u
#define GOBLIN_PHILOX_W0 0x9E3779B9u
#define GOBLIN_PHILOX_W1 0xBB67AE85u

typedef struct {
    uint32_t v[4];
} goblin_philox_block;

/* One round: two 32×32→64 multiplications, their halves mixed with the key and the other words. */
static inline goblin_philox_block goblin_philox_round(goblin_philox_block c, uint32_t k0,
                                                      uint32_t k1) {
    const uint64_t p0 = (uint64_t)GOBLIN_PHILOX_M0 * (uint64_t)c.v[0];
    const uint64_t p1 = (uint64_t)GOBLIN_PHILOX_M1 * (uint64_t)c.v[2];
    goblin_philox_block out;
    out.v[0] = (uint32_t)(p1 >> 32) ^ c.v[1] ^ k0;
    out.v[1] = (uint32_t)p1;
    out.v[2] = (uint32_t)(p0 >> 32) ^ c.v[3] ^ k1;
    out.v[3] = (uint32_t)p0;
    return out;
}

/* Ten rounds; the key is bumped by the Weyl constants between rounds (Random123's philox4x32_R). */
static inline goblin_philox_block goblin_philox4x32_10(goblin_philox_block counter, uint32_t k0,
                                                       uint32_t k1) {
    int round;
    for (round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += GOBLIN_PHILOX_W0;
            k1 += GOBLIN_PHILOX_W1;
        }
        counter = goblin_philox_round(counter, k0, k1);
    }
    return counter;
}

/* dropout_mask's word for one element: key = seed as (low, high) 32-bit halves; counter =
 * offset + index as a 128-bit number, low word first. Returns the first output word. */
static inline uint32_t goblin_philox_dropout_word(uint64_t seed, uint64_t offset, uint64_t index) {
    const uint64_t position = offset + index;
    goblin_philox_block counter;
    counter.v[0] = (uint32_t)position;
    counter.v[1] = (uint32_t)(position >> 32);
    counter.v[2] = position < offset ? 1u : 0u; /* the carry of offset + index into bit 64 */
    counter.v[3] = 0u;
    return goblin_philox4x32_10(counter, (uint32_t)seed, (uint32_t)(seed >> 32)).v[0];
}

#endif /* GOBLIN_PHILOX_H */
