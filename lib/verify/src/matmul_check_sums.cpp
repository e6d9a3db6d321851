#include "matmul_check_detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "goblin/core/cpu_clones.hpp"

namespace goblin::verify::detail {
namespace {

using core::DType;
using core::MatrixView;

// Four lanes of f64, one AVX2 register; plain SSE2 code splits it in two. Eight: one AVX-512
// register (target_clones keeps a 32-byte type in 32-byte registers, so the wide sums have their
// own type and function).
using Lanes = double __attribute__((vector_size(32)));
using WideLanes = double __attribute__((vector_size(64)));

// Each width's sign bits.
template <class V> struct LaneTypes;
template <> struct LaneTypes<Lanes> {
    using Bits = std::uint64_t __attribute__((vector_size(32)));
};
template <> struct LaneTypes<WideLanes> {
    using Bits = std::uint64_t __attribute__((vector_size(64)));
};

template <class V> constexpr int kLanesOf = static_cast<int>(sizeof(V) / sizeof(double));

// Helpers take lanes by reference: passing 32-byte vectors by value changes the ABI between the
// AVX2 clone and the baseline.
template <class V> [[gnu::always_inline]] inline void loadLanes(const double* source, V& lanes) {
    std::memcpy(&lanes, source, sizeof lanes);
}

// f32 values widened to f64 lanes, element by element: GCC makes that one conversion
// instruction, where __builtin_convertvector of a float vector converts it in halves (through
// the stack for AVX2).
[[gnu::always_inline]] inline void loadLanes(const float* source, Lanes& lanes) {
    lanes = Lanes{source[0], source[1], source[2], source[3]};
}

[[gnu::always_inline]] inline void loadLanes(const float* source, WideLanes& lanes) {
    lanes = WideLanes{source[0], source[1], source[2], source[3],
                      source[4], source[5], source[6], source[7]};
}

template <class V> [[gnu::always_inline]] inline void absLanes(const V& lanes, V& magnitude) {
    using Bits = typename LaneTypes<V>::Bits;
    const Bits noSign = ~Bits{} >> 1;
    magnitude = reinterpret_cast<V>(reinterpret_cast<Bits>(lanes) & noSign);
}

template <class V> [[gnu::always_inline]] inline double sumLanes(const V& lanes) {
    double total = 0.0;
    for (int l = 0; l < kLanesOf<V>; ++l)
        total += lanes[l];
    return total;
}

// The lane sums of four vectors at once, out = {Σa, Σb, Σc, Σd}: pairs of vectors are folded
// half onto half by shuffles, so four sums cost three or four vector additions instead of a
// chain of lane extractions each.
[[gnu::always_inline]] inline void sumsOfFour(const Lanes& a, const Lanes& b, const Lanes& c,
                                              const Lanes& d, double out[4]) {
    const Lanes ab = __builtin_shufflevector(a, b, 0, 1, 4, 5) +
                     __builtin_shufflevector(a, b, 2, 3, 6, 7); // a's two halves, b's
    const Lanes cd =
        __builtin_shufflevector(c, d, 0, 1, 4, 5) + __builtin_shufflevector(c, d, 2, 3, 6, 7);
    const Lanes total =
        __builtin_shufflevector(ab, cd, 0, 2, 4, 6) + __builtin_shufflevector(ab, cd, 1, 3, 5, 7);
    std::memcpy(out, &total, sizeof total);
}

[[gnu::always_inline]] inline void sumsOfFour(const WideLanes& a, const WideLanes& b,
                                              const WideLanes& c, const WideLanes& d,
                                              double out[4]) {
    const WideLanes ab = __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11) +
                         __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15);
    const WideLanes cd = __builtin_shufflevector(c, d, 0, 1, 2, 3, 8, 9, 10, 11) +
                         __builtin_shufflevector(c, d, 4, 5, 6, 7, 12, 13, 14, 15);
    // Lanes of a, a, b, b, c, c, d, d: each the sum of two of ab's or cd's.
    const WideLanes pairs = __builtin_shufflevector(ab, cd, 0, 1, 4, 5, 8, 9, 12, 13) +
                            __builtin_shufflevector(ab, cd, 2, 3, 6, 7, 10, 11, 14, 15);
    const WideLanes total = pairs + __builtin_shufflevector(pairs, pairs, 1, 0, 3, 2, 5, 4, 7, 6);
    for (int v = 0; v < 4; ++v)
        out[v] = total[2 * v];
}

constexpr int kRows = 4;

// The three sums of four rows x against a pair of signed probes y0, y1 and a magnitude probe t:
// x·y0, x·y1, |x|·t per row, each element widened to f64 once, V's lanes at a time. The rows share
// every probe load. Named accumulators, not arrays: GCC keeps them in registers. Reassociating the
// f64 sums is fine: the bounds hold for any summation order.
template <class V, class T>
[[gnu::always_inline]] inline void rowSumsBody(const T* const x[kRows], std::int64_t length,
                                               const double* y0, const double* y1, const double* t,
                                               double sums[kRows][3]) {
    constexpr int kStep = kLanesOf<V>;
    V a0 = {}, a1 = {}, a2 = {}, b0 = {}, b1 = {}, b2 = {};
    V c0 = {}, c1 = {}, c2 = {}, d0 = {}, d1 = {}, d2 = {};
    std::int64_t j = 0;
    for (; j + kStep <= length; j += kStep) {
        V p0, p1, pm, value, magnitude;
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
    double bySum[3][kRows]; // [which sum][row]
    sumsOfFour(a0, b0, c0, d0, bySum[0]);
    sumsOfFour(a1, b1, c1, d1, bySum[1]);
    sumsOfFour(a2, b2, c2, d2, bySum[2]);
    double out[kRows][3];
    for (int r = 0; r < kRows; ++r)
        for (int v = 0; v < 3; ++v)
            out[r][v] = bySum[v][r];
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

// Compiled for AVX2+FMA and the baseline, picked at load time for the CPU it runs on; on a CPU
// with AVX-512, eight lanes at a time (twice the sums per instruction, and one conversion of
// eight floats where four lanes convert two and two).

GOBLIN_CPU_CLONES void rowSumsNarrow(const float* const x[kRows], std::int64_t length,
                                     const double* y0, const double* y1, const double* t,
                                     double sums[kRows][3]) {
    rowSumsBody<Lanes>(x, length, y0, y1, t, sums);
}

GOBLIN_AVX512_ONLY void rowSumsWide(const float* const x[kRows], std::int64_t length,
                                    const double* y0, const double* y1, const double* t,
                                    double sums[kRows][3]) {
    rowSumsBody<WideLanes>(x, length, y0, y1, t, sums);
}

void rowSums(const float* const x[kRows], std::int64_t length, const double* y0, const double* y1,
             const double* t, double sums[kRows][3]) {
    if (core::avx512Present())
        rowSumsWide(x, length, y0, y1, t, sums);
    else
        rowSumsNarrow(x, length, y0, y1, t, sums);
}

// Compensated sums for f64 rows (Ogita, Rump and Oishi's Dot2, kept as an unrounded pair hi + lo):
// each product is split exactly into x·y = h + l (TwoProduct, by FMA), h is added to hi by TwoSum
// (error-free: hi + q = old hi + h exactly, whatever the order), and q, l and the products with
// the probe's own low part go to lo in plain f64. Any lane order keeps the pair within the bound of
// blockSums (matmul_check_detail.hpp; docs/verification.md, "Matmul tiles").
[[gnu::always_inline]] inline void exactProduct(const Lanes& x, const Lanes& y, Lanes& product,
                                                Lanes& error) {
    product = x * y;
    for (int l = 0; l < 4; ++l)
        error[l] = __builtin_fma(x[l], y[l], -product[l]);
}

[[gnu::always_inline]] inline void addCompensated(const Lanes& x, const Lanes& y, Lanes& hi,
                                                  Lanes& lo) {
    Lanes product, productError;
    exactProduct(x, y, product, productError);
    const Lanes sum = hi + product;
    const Lanes back = sum - hi;
    const Lanes sumError = (hi - (sum - back)) + (product - back);
    hi = sum;
    lo += sumError + productError;
}

// TwoSum of scalars: hi + lo gains value exactly (lo collects the rounding).
[[gnu::always_inline]] inline void twoSumInto(double value, double& hi, double& lo) {
    const double sum = hi + value;
    const double back = sum - hi;
    lo += (hi - (sum - back)) + (value - back);
    hi = sum;
}

[[gnu::always_inline]] inline void foldLanes(const Lanes& hi, const Lanes& lo, double& outHi,
                                             double& outLo) {
    outHi = hi[0];
    outLo = (lo[0] + lo[1]) + (lo[2] + lo[3]);
    for (int l = 1; l < 4; ++l)
        twoSumInto(hi[l], outHi, outLo);
}

// Four f64 rows x against a pair of signed probes y0, y1 (with low parts z0, z1 when Tails: the
// probe is y + z) and a magnitude probe t: per row hi0, lo0, hi1, lo1 and the plain |x|·t.
template <bool Tails>
[[gnu::always_inline]] inline void
compensatedSumsBody(const double* const x[kRows], std::int64_t length, const double* y0,
                    const double* y1, const double* z0, const double* z1, const double* t,
                    double sums[kRows][5]) {
    Lanes hi0[kRows] = {}, lo0[kRows] = {}, hi1[kRows] = {}, lo1[kRows] = {}, mag[kRows] = {};
    std::int64_t j = 0;
    for (; j + 4 <= length; j += 4) {
        Lanes p0, p1, pm, q0 = {}, q1 = {};
        loadLanes(y0 + j, p0);
        loadLanes(y1 + j, p1);
        loadLanes(t + j, pm);
        if constexpr (Tails) {
            loadLanes(z0 + j, q0);
            loadLanes(z1 + j, q1);
        }
#pragma GCC unroll 4
        for (int r = 0; r < kRows; ++r) {
            Lanes value, magnitude;
            loadLanes(x[r] + j, value);
            addCompensated(value, p0, hi0[r], lo0[r]);
            addCompensated(value, p1, hi1[r], lo1[r]);
            if constexpr (Tails) {
                lo0[r] += value * q0;
                lo1[r] += value * q1;
            }
            absLanes(value, magnitude);
            mag[r] += magnitude * pm;
        }
    }
    for (int r = 0; r < kRows; ++r) {
        double h0, l0, h1, l1;
        foldLanes(hi0[r], lo0[r], h0, l0);
        foldLanes(hi1[r], lo1[r], h1, l1);
        double m = sumLanes(mag[r]);
        const auto add = [&](std::int64_t at, const double* probe, const double* tail, double& hi,
                             double& lo) {
            const double value = x[r][at];
            const double product = value * probe[at];
            lo += std::fma(value, probe[at], -product);
            twoSumInto(product, hi, lo);
            if constexpr (Tails)
                lo += value * tail[at];
        };
        for (std::int64_t at = j; at < length; ++at) {
            add(at, y0, z0, h0, l0);
            add(at, y1, z1, h1, l1);
            m += std::fabs(static_cast<double>(x[r][at])) * t[at];
        }
        sums[r][0] = h0;
        sums[r][1] = l0;
        sums[r][2] = h1;
        sums[r][3] = l1;
        sums[r][4] = m;
    }
}

GOBLIN_CPU_CLONES_WITH_AVX512 void compensatedSums(const double* const x[kRows],
                                                   std::int64_t length, const double* y0,
                                                   const double* y1, const double* t,
                                                   double sums[kRows][5]) {
    compensatedSumsBody<false>(x, length, y0, y1, nullptr, nullptr, t, sums);
}

GOBLIN_CPU_CLONES_WITH_AVX512 void compensatedSums(const double* const x[kRows],
                                                   std::int64_t length, const double* y0,
                                                   const double* y1, const double* z0,
                                                   const double* z1, const double* t,
                                                   double sums[kRows][5]) {
    compensatedSumsBody<true>(x, length, y0, y1, z0, z1, t, sums);
}

// Rows go four at a time (a short last group repeats its last row and drops the copies), blocks
// one after the other so the rows stay in cache, signed probes in pairs (an odd count repeats the
// last one; the magnitude sum of a later pair is the same and dropped). f64 rows get compensated
// signed sums, their low parts in `tails`.
template <class T>
BlockSums blockSumsOf(const MatrixView& matrix, const std::vector<BlockProbes>& blocks,
                      int vectors) {
    constexpr bool kCompensated = std::is_same_v<T, double>;
    const auto blockCount = static_cast<std::int64_t>(blocks.size());
    const std::int64_t stride = vectors + 1;
    BlockSums result;
    result.sums.assign(static_cast<std::size_t>(matrix.rows * blockCount * stride), 0.0);
    if (kCompensated)
        result.tails.assign(result.sums.size(), 0.0);
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
                double out[kRows][5];
                if constexpr (kCompensated) {
                    if (probes.signedTails[v] != nullptr)
                        compensatedSums(x, probes.length, probes.signedProbes[v],
                                        probes.signedProbes[w], probes.signedTails[v],
                                        probes.signedTails[w], probes.magnitudeProbe, out);
                    else
                        compensatedSums(x, probes.length, probes.signedProbes[v],
                                        probes.signedProbes[w], probes.magnitudeProbe, out);
                } else {
                    double plain[kRows][3];
                    rowSums(x, probes.length, probes.signedProbes[v], probes.signedProbes[w],
                            probes.magnitudeProbe, plain);
                    for (int r = 0; r < kRows; ++r) {
                        out[r][0] = plain[r][0];
                        out[r][1] = 0.0;
                        out[r][2] = plain[r][1];
                        out[r][3] = 0.0;
                        out[r][4] = plain[r][2];
                    }
                }
                for (int r = 0; r < kRows && i + r < matrix.rows; ++r) {
                    const auto at =
                        static_cast<std::size_t>(((i + r) * blockCount + block) * stride);
                    result.sums[at + static_cast<std::size_t>(v)] = out[r][0];
                    result.sums[at + static_cast<std::size_t>(w)] = out[r][2];
                    if (v == 0)
                        result.sums[at + static_cast<std::size_t>(vectors)] = out[r][4];
                    if (kCompensated) {
                        result.tails[at + static_cast<std::size_t>(v)] = out[r][1];
                        result.tails[at + static_cast<std::size_t>(w)] = out[r][3];
                    }
                }
            }
        }
    }
    return result;
}

} // namespace

BlockSums blockSums(const MatrixView& matrix, const std::vector<BlockProbes>& blocks, int vectors) {
    if (matrix.dtype == DType::F32)
        return blockSumsOf<float>(matrix, blocks, vectors);
    return blockSumsOf<double>(matrix, blocks, vectors);
}

} // namespace goblin::verify::detail
