#include "matmul_check_detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace goblin::verify::detail {
namespace {

using core::DType;
using core::MatrixView;

// Four lanes of f64, one AVX2 register; plain SSE2 code splits it in two.
using Lanes = double __attribute__((vector_size(32)));
using LanesF32 = float __attribute__((vector_size(16)));
using LaneBits = std::uint64_t __attribute__((vector_size(32)));

// Helpers take lanes by reference: passing 32-byte vectors by value changes the ABI between the
// AVX2 clone and the baseline.
inline void loadLanes(const double* source, Lanes& lanes) {
    std::memcpy(&lanes, source, sizeof lanes);
}

inline void loadLanes(const float* source, Lanes& lanes) {
    LanesF32 narrow;
    std::memcpy(&narrow, source, sizeof narrow);
    lanes = __builtin_convertvector(narrow, Lanes);
}

inline void absLanes(const Lanes& lanes, Lanes& magnitude) {
    const LaneBits noSign = ~LaneBits{} >> 1;
    magnitude = reinterpret_cast<Lanes>(reinterpret_cast<LaneBits>(lanes) & noSign);
}

inline double sumLanes(const Lanes& lanes) {
    return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

constexpr int kRows = 4;

// The three sums of four rows x against a pair of signed probes y0, y1 and a magnitude probe t:
// x·y0, x·y1, |x|·t per row, each element widened to f64 once. The rows share every probe load.
// Named accumulators, not arrays: GCC keeps them in registers. Reassociating the f64 sums is fine:
// the bounds hold for any summation order.
template <class T>
[[gnu::always_inline]] inline void rowSumsBody(const T* const x[kRows], std::int64_t length,
                                               const double* y0, const double* y1, const double* t,
                                               double sums[kRows][3]) {
    Lanes a0 = {}, a1 = {}, a2 = {}, b0 = {}, b1 = {}, b2 = {};
    Lanes c0 = {}, c1 = {}, c2 = {}, d0 = {}, d1 = {}, d2 = {};
    std::int64_t j = 0;
    for (; j + 4 <= length; j += 4) {
        Lanes p0, p1, pm, value, magnitude;
        loadLanes(y0 + j, p0);
        loadLanes(y1 + j, p1);
        loadLanes(t + j, pm);
        loadLanes(x[0] + j, value);
        a0 += value * p0;
        a1 += value * p1;
        absLanes(value, magnitude);
        a2 += magnitude * pm;
        loadLanes(x[1] + j, value);
        b0 += value * p0;
        b1 += value * p1;
        absLanes(value, magnitude);
        b2 += magnitude * pm;
        loadLanes(x[2] + j, value);
        c0 += value * p0;
        c1 += value * p1;
        absLanes(value, magnitude);
        c2 += magnitude * pm;
        loadLanes(x[3] + j, value);
        d0 += value * p0;
        d1 += value * p1;
        absLanes(value, magnitude);
        d2 += magnitude * pm;
    }
    double out[kRows][3] = {{sumLanes(a0), sumLanes(a1), sumLanes(a2)},
                            {sumLanes(b0), sumLanes(b1), sumLanes(b2)},
                            {sumLanes(c0), sumLanes(c1), sumLanes(c2)},
                            {sumLanes(d0), sumLanes(d1), sumLanes(d2)}};
    for (; j < length; ++j) {
        for (int r = 0; r < kRows; ++r) {
            const auto value = static_cast<double>(x[r][j]);
            out[r][0] += value * y0[j];
            out[r][1] += value * y1[j];
            out[r][2] += std::fabs(value) * t[j];
        }
    }
    std::memcpy(sums, out, sizeof out);
}

// Compiled for AVX-512, AVX2+FMA and the baseline, picked at load time for the CPU it runs on.
#if defined(__x86_64__) && defined(__GNUC__)
#define GOBLIN_CPU_CLONES [[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]]
#else
#define GOBLIN_CPU_CLONES
#endif

GOBLIN_CPU_CLONES void rowSums(const float* const x[kRows], std::int64_t length, const double* y0,
                               const double* y1, const double* t, double sums[kRows][3]) {
    rowSumsBody(x, length, y0, y1, t, sums);
}

GOBLIN_CPU_CLONES void rowSums(const double* const x[kRows], std::int64_t length, const double* y0,
                               const double* y1, const double* t, double sums[kRows][3]) {
    rowSumsBody(x, length, y0, y1, t, sums);
}

// Rows go four at a time (a short last group repeats its last row and drops the copies), blocks
// one after the other so the rows stay in cache, signed probes in pairs (an odd count repeats the
// last one; the magnitude sum of a later pair is the same and dropped).
template <class T>
std::vector<double> blockSumsOf(const MatrixView& matrix, const std::vector<BlockProbes>& blocks,
                                int vectors) {
    const auto blockCount = static_cast<std::int64_t>(blocks.size());
    const std::int64_t stride = vectors + 1;
    std::vector<double> sums(static_cast<std::size_t>(matrix.rows * blockCount * stride), 0.0);
    for (std::int64_t i = 0; i < matrix.rows; i += kRows) {
        std::int64_t rows[kRows];
        for (int r = 0; r < kRows; ++r)
            rows[r] = std::min(i + r, matrix.rows - 1);
        for (std::int64_t block = 0; block < blockCount; ++block) {
            const BlockProbes& probes = blocks[static_cast<std::size_t>(block)];
            const T* x[kRows];
            for (int r = 0; r < kRows; ++r)
                x[r] = matrix.row<T>(rows[r]) + probes.offset;
            for (int v = 0; v < vectors; v += 2) {
                const int w = std::min(v + 1, vectors - 1);
                double out[kRows][3];
                rowSums(x, probes.length, probes.signedProbes[v], probes.signedProbes[w],
                        probes.magnitudeProbe, out);
                for (int r = 0; r < kRows && i + r < matrix.rows; ++r) {
                    double* at = sums.data() + ((i + r) * blockCount + block) * stride;
                    at[v] = out[r][0];
                    at[w] = out[r][1];
                    if (v == 0)
                        at[vectors] = out[r][2];
                }
            }
        }
    }
    return sums;
}

} // namespace

std::vector<double> blockSums(const MatrixView& matrix, const std::vector<BlockProbes>& blocks,
                              int vectors) {
    if (matrix.dtype == DType::F32)
        return blockSumsOf<float>(matrix, blocks, vectors);
    return blockSumsOf<double>(matrix, blocks, vectors);
}

} // namespace goblin::verify::detail
