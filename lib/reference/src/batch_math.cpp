// The batched transcendentals: each op's ordinary path written branch-free over one element, in a
// plain loop the compiler vectorises (this file is built with the loop vectoriser's full cost
// model, see CMakeLists.txt), with the operations of goblin_math.h's scalar function in the same
// order; every element outside the ordinary range (NaN, ±inf, huge, some tiny values) is then
// computed again by the scalar function itself, so each range branch, special value and library
// call stays the scalar function's.
#include "batch_math.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "goblin/core/cpu_clones.hpp"
#include "scalar_math.hpp"

namespace goblin::reference::detail {
namespace {

// Elements per chunk: the results wait in a chunk's buffers while in and out may be one array.
constexpr std::size_t kChunk = 512;

// x + 1.5·2⁵² − 1.5·2⁵² rounds x to an integer (ties to even, as GM_RINT does) for |x| < 2⁵¹, and
// the sum's low bits hold that integer.
constexpr double kRoundingShift = 6755399441055744.0;
constexpr std::int64_t kRoundingShiftBits = 0x4338000000000000;

// GM_RINT(x) (up to the sign of a zero, which no caller below can tell apart) and 2^that, for
// |x| small enough that 2^rint(x) is a normal double.
struct Rounded {
    double integer;
    double power;
};
inline Rounded roundToInteger(double x) {
    const double shifted = x + kRoundingShift;
    const std::int64_t integer = std::bit_cast<std::int64_t>(shifted) - kRoundingShiftBits;
    return {shifted - kRoundingShift, std::bit_cast<double>((integer + 1023) << 52)};
}

// gm_exp_f64 for x in [-708, 709], where 2^k is a normal double and no range branch is taken.
inline bool expIsOrdinary(double x) {
    return x >= -708.0 && x <= 709.0;
}
// Below this gm_exp_f64 returns exactly 0 (−inf too: a softmax's masked entries).
inline bool expIsZero(double x) {
    return x < -745.1332191019412;
}
inline double expOrdinary(double x) {
    const Rounded k = roundToInteger(x * GM_INV_LN2);
    const double r = (x - k.integer * GM_LN2_HI) - k.integer * GM_LN2_LO;
    return (1.0 + gm::gm_expm1_reduced_f64(r)) * k.power;
}

// gm_tanh_f64 for |x| <= 18 (expm1(2|x|) never needs k > 52, and 2|x| is never below expm1's own
// tiny bound where tanh's is not); both of expm1's paths are computed and one is kept.
inline bool tanhIsOrdinary(double x) {
    return std::fabs(x) <= 18.0;
}
inline double tanhOrdinary(double x) {
    const double a = std::fabs(x);
    const double twice = 2.0 * a;
    const Rounded k = roundToInteger(twice * GM_INV_LN2);
    const double s =
        gm::gm_expm1_reduced_f64((twice - k.integer * GM_LN2_HI) - k.integer * GM_LN2_LO);
    const double t =
        k.integer == 0.0 ? gm::gm_expm1_reduced_f64(twice) : (k.power - 1.0) + s * k.power;
    return a < 3.725290298461914e-09 ? x : std::copysign(t / (t + 2.0), x);
}

// gm_erf_f64 for |x| < 3.25: the Taylor series at 0, or at the centre of |x|'s interval.
inline bool erfIsOrdinary(double x) {
    return std::fabs(x) < 3.25;
}

// That erf in three passes over a chunk: x's interval and its offset from the
// interval's centre (vectorised), the Taylor series at the centre of each element's interval
// (sixteen elements side by side, whose chains overlap: the table reads keep this pass from
// vectorising, but see erfSeriesWide), then the choice between that and the series at 0
// (vectorised).
struct ErfIntervals {
    int base[kChunk]; // the interval's first coefficient in gm_erf_taylor_f64
    double h[kChunk]; // |x| − the interval's centre
    double series[kChunk];
};

inline void erfIntervals(const double* x, std::size_t count, ErfIntervals& work) {
    for (std::size_t i = 0; i < count; ++i) {
        const double a = std::fabs(x[i]);
        // (int)((a − 0.25)·4) truncates, so below 0.25 (where the series at 0 is kept) it reads
        // interval 0; at a = 0 (x = 0, or an element that is not ordinary) it is −1, which would
        // read before the table, hence the max.
        const int interval = std::max(0, static_cast<int>((a - 0.25) * 4.0));
        work.h[i] = a - (0.25 + 0.25 * (static_cast<double>(interval) + 0.5));
        work.base[i] = interval * 16;
    }
}

// The series of `side` elements from `first`, their Horner chains interleaved.
template <std::size_t side> void erfSeriesSide(std::size_t first, ErfIntervals& work) {
    double p[side];
    const double* c[side];
    double h[side];
    for (std::size_t j = 0; j < side; ++j) {
        c[j] = gm::gm_erf_taylor_f64 + work.base[first + j];
        h[j] = work.h[first + j];
        p[j] = c[j][15];
    }
#pragma GCC unroll 15
    for (int k = 14; k >= 0; --k)
#pragma GCC unroll 16
        for (std::size_t j = 0; j < side; ++j)
            p[j] = c[j][k] + h[j] * p[j];
    for (std::size_t j = 0; j < side; ++j)
        work.series[first + j] = p[j];
}

#if defined(__x86_64__)
// Coefficient k of every interval side by side (12 intervals, padded to 16 with zeros).
struct ErfColumns {
    alignas(64) double at[16][16]; // [k][interval]
    ErfColumns() {
        for (int k = 0; k < 16; ++k)
            for (int interval = 0; interval < 16; ++interval)
                at[k][interval] = interval < 12 ? gm::gm_erf_taylor_f64[16 * interval + k] : 0.0;
    }
};
const ErfColumns kErfColumns;

// erfSeriesSide<64> with AVX-512, where the processor has it: coefficient k of every interval
// fits two registers, and each element's is picked by one permute of those (vpermt2pd), eight
// elements at a time, instead of a load per element (gathers are slower still); eight such Horner
// chains advance side by side, so that one's multiply waits not on its own last add but on seven
// others'. The same products and sums in the same order (no FMA: -ffp-contract=off), so the same
// bits.
constexpr std::size_t kWideChains = 8;
__attribute__((target("avx512f"))) void erfSeriesWide(std::size_t first, ErfIntervals& work) {
    const auto& columns = kErfColumns.at;
    __m512i interval[kWideChains];
    __m512d h[kWideChains], p[kWideChains];
    for (std::size_t q = 0; q < kWideChains; ++q) {
        const __m256i base =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(work.base + first + 8 * q));
        // base = 16·interval. (The maskz forms: GCC 12 warns that the plain ones read an
        // undefined register.)
        interval[q] = _mm512_maskz_srli_epi64(0xFF, _mm512_maskz_cvtepi32_epi64(0xFF, base), 4);
        h[q] = _mm512_loadu_pd(work.h + first + 8 * q);
        p[q] = _mm512_permutex2var_pd(_mm512_load_pd(columns[15]), interval[q],
                                      _mm512_load_pd(columns[15] + 8));
    }
#pragma GCC unroll 1
    for (int k = 14; k >= 0; --k) {
        const __m512d low = _mm512_load_pd(columns[k]);
        const __m512d high = _mm512_load_pd(columns[k] + 8);
        for (std::size_t q = 0; q < kWideChains; ++q)
            p[q] = _mm512_add_pd(_mm512_permutex2var_pd(low, interval[q], high),
                                 _mm512_mul_pd(h[q], p[q]));
    }
    for (std::size_t q = 0; q < kWideChains; ++q)
        _mm512_storeu_pd(work.series + first + 8 * q, p[q]);
}
#endif

inline void erfSeries(std::size_t count, ErfIntervals& work) {
    std::size_t i = 0;
#if defined(__x86_64__)
    if (core::avx512Present())
        for (; i + 8 * kWideChains <= count; i += 8 * kWideChains)
            erfSeriesWide(i, work);
#endif
    for (; i + 16 <= count; i += 16)
        erfSeriesSide<16>(i, work);
    for (; i < count; ++i)
        erfSeriesSide<1>(i, work);
}

inline double erfChoice(double x, double series) {
    const double a = std::fabs(x);
    const double near0 = gm::gm_erf_near0_f64(x);
    return a < 3.725290298461914e-09 ? 1.1283791670955126 * x
                                     : (a < 0.25 ? near0 : std::copysign(series, x));
}

// A literal of goblin_math.h in T, as that header writes it (a float literal for f32, not a double
// rounded again).
template <class T> constexpr T literal(float asFloat, double asDouble) {
    if constexpr (sizeof(T) == sizeof(float))
        return asFloat;
    else
        return asDouble;
}
#define GM_BATCH_LITERAL(T, x) literal<T>(x##f, x)

// One element of each op: its arithmetic in T around its f64 core (rounded once to T, as the f32
// functions do), as GM_DEFINE_REAL and gm_sigmoid_* write it, for an ordinary x; and whether x is
// ordinary for the op.
template <class T> T tanhGeluInner(T x) {
    return GM_BATCH_LITERAL(T, 0.7978845608028654) *
           (x + GM_BATCH_LITERAL(T, 0.044715) * x * x * x);
}
template <class T> T halfSqrtHalf(T x) {
    return x * GM_BATCH_LITERAL(T, 0.7071067811865476);
}
template <BatchOp op, class T> bool isOrdinary(T x) {
    if constexpr (op == BatchOp::Exp)
        return expIsOrdinary(x) || expIsZero(x);
    else if constexpr (op == BatchOp::Sigmoid)
        return expIsOrdinary(-x);
    else if constexpr (op == BatchOp::Erf)
        return erfIsOrdinary(x);
    else if constexpr (op == BatchOp::Gelu)
        return erfIsOrdinary(halfSqrtHalf(x));
    else if constexpr (op == BatchOp::Tanh)
        return tanhIsOrdinary(x);
    else
        return tanhIsOrdinary(tanhGeluInner(x));
}
template <BatchOp op, class T> T ordinary(T x) {
    if constexpr (op == BatchOp::Exp) {
        // Both sides computed and one kept, so that the loop stays branch-free.
        const T value = static_cast<T>(expOrdinary(expIsOrdinary(x) ? x : 0.0));
        return expIsZero(x) ? T(0) : value;
    } else if constexpr (op == BatchOp::Sigmoid)
        return T(1.0) / (T(1.0) + static_cast<T>(expOrdinary(-x)));
    else if constexpr (op == BatchOp::Tanh)
        return static_cast<T>(tanhOrdinary(x));
    else
        return T(0.5) * x * (T(1.0) + static_cast<T>(tanhOrdinary(tanhGeluInner(x))));
}
#undef GM_BATCH_LITERAL

// The scalar function of an op: the fallback of the elements outside the ordinary range.
template <class T> T scalarOf(BatchOp op, T x) {
    switch (op) {
    case BatchOp::Exp:
        return mathExp(x);
    case BatchOp::Erf:
        return unaryOp(core::ops::OpCode::Erf, x, false);
    case BatchOp::Tanh:
        return unaryOp(core::ops::OpCode::Tanh, x, false);
    case BatchOp::Sigmoid:
        return unaryOp(core::ops::OpCode::Sigmoid, x, false);
    case BatchOp::Gelu:
        return gelu(x, false);
    default:
        return gelu(x, true);
    }
}

// The erf ops over a chunk (ordinary elements; the others give 0 here).
template <BatchOp op, class T> void erfChunk(const T* in, T* out, std::size_t count) {
    double argument[kChunk];
    for (std::size_t i = 0; i < count; ++i) {
        const T x = op == BatchOp::Gelu ? halfSqrtHalf(in[i]) : in[i];
        argument[i] = isOrdinary<op>(in[i]) ? static_cast<double>(x) : 0.0;
    }
    ErfIntervals work;
    erfIntervals(argument, count, work);
    erfSeries(count, work);
    for (std::size_t i = 0; i < count; ++i) {
        const T erf = static_cast<T>(erfChoice(argument[i], work.series[i]));
        out[i] = op == BatchOp::Gelu ? T(0.5) * in[i] * (T(1.0) + erf) : erf;
    }
}

// Every element of a chunk through the ordinary path, each made ordinary first (0 is ordinary for
// every op), so that the loops have no branch and vectorise. Each element is read before its own
// result is written, so out may be in.
template <BatchOp op, class T> void ordinaryChunk(const T* in, T* out, std::size_t count) {
    if constexpr (op == BatchOp::Erf || op == BatchOp::Gelu) {
        erfChunk<op>(in, out, count);
    } else {
        for (std::size_t i = 0; i < count; ++i)
            out[i] = ordinary<op>(isOrdinary<op>(in[i]) ? in[i] : T(0));
    }
}

// Whether any element of a chunk is not ordinary (one pass that vectorises, unlike the branch per
// element that recomputes them).
template <BatchOp op, class T> bool anyOutsideOrdinary(const T* in, std::size_t count) {
    unsigned outside = 0;
    for (std::size_t i = 0; i < count; ++i)
        outside += isOrdinary<op>(in[i]) ? 0u : 1u;
    return outside != 0;
}

// A chunk with elements outside the ordinary range: the ordinary path into a buffer (in is still
// read afterwards, and may be out), those elements again through the scalar function, then out.
template <BatchOp op, class T> void mixedChunk(const T* in, T* out, std::size_t count) {
    T results[kChunk];
    ordinaryChunk<op>(in, results, count);
    for (std::size_t i = 0; i < count; ++i)
        if (!isOrdinary<op>(in[i]))
            results[i] = scalarOf(op, in[i]);
    std::copy(results, results + count, out);
}

template <BatchOp op, class T> void batch(const T* in, T* out, std::size_t count) {
    for (std::size_t start = 0; start < count; start += kChunk) {
        const std::size_t size = std::min(kChunk, count - start);
        if (anyOutsideOrdinary<op>(in + start, size))
            mixedChunk<op>(in + start, out + start, size);
        else
            ordinaryChunk<op>(in + start, out + start, size);
    }
}

template <class T> void batchOf(BatchOp op, const T* in, T* out, std::size_t count) {
    switch (op) {
    case BatchOp::Exp:
        return batch<BatchOp::Exp>(in, out, count);
    case BatchOp::Sigmoid:
        return batch<BatchOp::Sigmoid>(in, out, count);
    case BatchOp::Erf:
        return batch<BatchOp::Erf>(in, out, count);
    case BatchOp::Gelu:
        return batch<BatchOp::Gelu>(in, out, count);
    case BatchOp::Tanh:
        return batch<BatchOp::Tanh>(in, out, count);
    default:
        return batch<BatchOp::GeluTanh>(in, out, count);
    }
}

// batchOf compiled for AVX-512 as well as for the library's own target (x86-64-v3 on x86-64),
// every loop in it inlined (flatten) so that the loops take the wider vectors: the same operations
// in the same order (no FMA: -ffp-contract=off; no reassociation), so the same bits, twice the
// lanes at a time.
#if defined(__x86_64__)
template <class T>
[[gnu::flatten, gnu::target("arch=x86-64-v4")]] void batchWide(BatchOp op, const T* in, T* out,
                                                               std::size_t count) {
    batchOf(op, in, out, count);
}
#endif

template <class T> void batchOnThisProcessor(BatchOp op, const T* in, T* out, std::size_t count) {
#if defined(__x86_64__)
    if (core::avx512Present())
        return batchWide(op, in, out, count);
#endif
    batchOf(op, in, out, count);
}

} // namespace

void batchUnary(BatchOp op, const float* in, float* out, std::size_t count) {
    batchOnThisProcessor(op, in, out, count);
}
void batchUnary(BatchOp op, const double* in, double* out, std::size_t count) {
    batchOnThisProcessor(op, in, out, count);
}

} // namespace goblin::reference::detail
