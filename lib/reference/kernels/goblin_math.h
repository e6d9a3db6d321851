// The per-element semantics of the op catalog (docs/ops.md), written once for the CPU reference
// (C++, compiled with -ffp-contract=off) and the OpenCL kernels (OpenCL C, prepended to every
// kernel source, FP_CONTRACT OFF, correctly rounded divide/sqrt). Same inputs, same operations in
// the same order: the two backends agree bit for bit wherever this header does not defer to the
// platform's libm/builtins (docs/ops.md, "Backend agreement"). Pure functions; any thread.
//
// Op selectors are the OpCode values of lib/core/include/goblin/core/ops/op_code.hpp (the C++ side
// static_asserts that they match). Types: f32, f64, i32, i64; bool is a 0/1 byte.
#ifndef GOBLIN_MATH_H
#define GOBLIN_MATH_H

#if defined(__OPENCL_VERSION__) || defined(__OPENCL_C_VERSION__)
#define GM_OPENCL 1
#endif

#ifdef GM_OPENCL
#pragma OPENCL FP_CONTRACT OFF
#ifdef GM_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#define GM_FN static inline
typedef int gm_i32;
typedef long gm_i64;
typedef uint gm_u32;
typedef ulong gm_u64;
typedef uchar gm_bool;
#define GM_FLOOR(x) floor(x)
#define GM_FMOD(x, y) fmod(x, y)
#define GM_COPYSIGN(x, y) copysign(x, y)
#define GM_FABS(x) fabs(x)
#define GM_SQRT(x) sqrt(x)
#define GM_LDEXP(x, e) ldexp(x, e)
#define GM_PLATFORM_EXP(x) exp(x)
#define GM_PLATFORM_LOG(x) log(x)
#define GM_PLATFORM_TANH(x) tanh(x)
#define GM_PLATFORM_ERF(x) erf(x)
#define GM_PLATFORM_LGAMMA(x) lgamma(x)
#define GM_PLATFORM_POW(x, y) pow(x, y)
#define GM_I32_MIN INT_MIN
#define GM_I32_MAX INT_MAX
#define GM_I64_MIN LONG_MIN
#define GM_I64_MAX LONG_MAX
#else
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
namespace goblin::reference::math {
// static: every translation unit keeps its own copy, compiled with its own flags (the reference's
// -ffp-contract=off), never one picked by the linker from a unit built otherwise.
#define GM_FN static inline
typedef std::int32_t gm_i32;
typedef std::int64_t gm_i64;
typedef std::uint32_t gm_u32;
typedef std::uint64_t gm_u64;
typedef unsigned char gm_bool;
#define GM_FLOOR(x) std::floor(x)
#define GM_FMOD(x, y) std::fmod(x, y)
#define GM_COPYSIGN(x, y) std::copysign(x, y)
#define GM_FABS(x) std::fabs(x)
#define GM_SQRT(x) std::sqrt(x)
// x·2^e. Where 2^e is a normal double the product with it is one correctly rounded multiplication,
// the value std::ldexp returns (also for subnormal, infinite and NaN results), without the library
// call that cost the exp-heavy kernels a tenth of their time; elsewhere std::ldexp itself.
GM_FN double gm_ldexp_host(double x, int e) {
    if (e < -1022 || e > 1023)
        return std::ldexp(x, e);
    const std::uint64_t bits = static_cast<std::uint64_t>(e + 1023) << 52;
    double scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return x * scale;
}
#define GM_LDEXP(x, e) gm_ldexp_host(x, e)
#define GM_PLATFORM_EXP(x) std::exp(x)
#define GM_PLATFORM_LOG(x) std::log(x)
#define GM_PLATFORM_TANH(x) std::tanh(x)
#define GM_PLATFORM_ERF(x) std::erf(x)
#define GM_PLATFORM_LGAMMA(x) std::lgamma(x)
#define GM_PLATFORM_POW(x, y) std::pow(x, y)
#define GM_I32_MIN INT32_MIN
#define GM_I32_MAX INT32_MAX
#define GM_I64_MIN INT64_MIN
#define GM_I64_MAX INT64_MAX
#endif

// OpCode values (op_code.hpp), the selectors of the switch functions below.
#define GM_OP_ADD 0
#define GM_OP_SUB 1
#define GM_OP_MUL 2
#define GM_OP_DIV 3
#define GM_OP_POW 4
#define GM_OP_MAXIMUM 5
#define GM_OP_MINIMUM 6
#define GM_OP_FLOOR_DIVIDE 7
#define GM_OP_REMAINDER 8
#define GM_OP_EQ 9
#define GM_OP_NE 10
#define GM_OP_LT 11
#define GM_OP_LE 12
#define GM_OP_GT 13
#define GM_OP_GE 14
#define GM_OP_LOGICAL_AND 15
#define GM_OP_LOGICAL_OR 16
#define GM_OP_LOGICAL_XOR 17
#define GM_OP_LOGICAL_NOT 18
#define GM_OP_BITWISE_AND 19
#define GM_OP_BITWISE_OR 20
#define GM_OP_BITWISE_XOR 21
#define GM_OP_BITWISE_NOT 22
#define GM_OP_NEG 23
#define GM_OP_ABS 24
#define GM_OP_EXP 25
#define GM_OP_LOG 26
#define GM_OP_SQRT 27
#define GM_OP_RSQRT 28
#define GM_OP_TANH 29
#define GM_OP_SIGMOID 30
#define GM_OP_ERF 31
#define GM_OP_LGAMMA 32
#define GM_OP_RELU 33
#define GM_OP_GELU 34
#define GM_OP_ISNAN 35

// ---------------------------------------------------------------------------------------------
// Integers: two's-complement wrapping (computed in the unsigned type, no UB), PyTorch rounding.
// ---------------------------------------------------------------------------------------------
#define GM_DEFINE_INT(I, U, S)                                                                     \
    GM_FN I gm_wrap_add_##S(I a, I b) {                                                            \
        return (I)((U)a + (U)b);                                                                   \
    }                                                                                              \
    GM_FN I gm_wrap_sub_##S(I a, I b) {                                                            \
        return (I)((U)a - (U)b);                                                                   \
    }                                                                                              \
    GM_FN I gm_wrap_mul_##S(I a, I b) {                                                            \
        return (I)((U)a * (U)b);                                                                   \
    }                                                                                              \
    GM_FN I gm_wrap_neg_##S(I a) {                                                                 \
        return (I)((U)0 - (U)a);                                                                   \
    }                                                                                              \
    /* Floor division; b == 0 is refused before (here it gives 0). MIN / -1 wraps to MIN. */       \
    GM_FN I gm_floor_divide_##S(I a, I b) {                                                        \
        if (b == 0)                                                                                \
            return 0;                                                                              \
        if (b == -1)                                                                               \
            return gm_wrap_neg_##S(a);                                                             \
        I quotient = (I)(a / b);                                                                   \
        int inexact = (I)(a % b) != 0;                                                             \
        return inexact && ((a < 0) != (b < 0)) ? (I)(quotient - 1) : quotient;                     \
    }                                                                                              \
    /* Remainder with the divisor's sign (Python/PyTorch). */                                      \
    GM_FN I gm_remainder_##S(I a, I b) {                                                           \
        if (b == 0 || b == -1)                                                                     \
            return 0;                                                                              \
        I r = (I)(a % b);                                                                          \
        return r != 0 && ((r < 0) != (b < 0)) ? (I)(r + b) : r;                                    \
    }                                                                                              \
    GM_FN I gm_binary_##S(int op, I a, I b) {                                                      \
        switch (op) {                                                                              \
        case GM_OP_ADD:                                                                            \
            return gm_wrap_add_##S(a, b);                                                          \
        case GM_OP_SUB:                                                                            \
            return gm_wrap_sub_##S(a, b);                                                          \
        case GM_OP_MUL:                                                                            \
            return gm_wrap_mul_##S(a, b);                                                          \
        case GM_OP_MAXIMUM:                                                                        \
            return a > b ? a : b;                                                                  \
        case GM_OP_MINIMUM:                                                                        \
            return a < b ? a : b;                                                                  \
        case GM_OP_FLOOR_DIVIDE:                                                                   \
            return gm_floor_divide_##S(a, b);                                                      \
        case GM_OP_REMAINDER:                                                                      \
            return gm_remainder_##S(a, b);                                                         \
        case GM_OP_BITWISE_AND:                                                                    \
            return (I)(a & b);                                                                     \
        case GM_OP_BITWISE_OR:                                                                     \
            return (I)(a | b);                                                                     \
        default:                                                                                   \
            return (I)(a ^ b);                                                                     \
        }                                                                                          \
    }                                                                                              \
    GM_FN I gm_unary_##S(int op, I x) {                                                            \
        switch (op) {                                                                              \
        case GM_OP_NEG:                                                                            \
            return gm_wrap_neg_##S(x);                                                             \
        case GM_OP_ABS:                                                                            \
            return x < 0 ? gm_wrap_neg_##S(x) : x;                                                 \
        case GM_OP_RELU:                                                                           \
            return x > 0 ? x : (I)0;                                                               \
        case GM_OP_BITWISE_NOT:                                                                    \
            return (I)(~x);                                                                        \
        default:                                                                                   \
            return x;                                                                              \
        }                                                                                          \
    }

GM_DEFINE_INT(gm_i32, gm_u32, i32)
GM_DEFINE_INT(gm_i64, gm_u64, i64)

// bool (0/1 bytes): bitwise ops are logical.
GM_FN gm_bool gm_binary_b8(int op, gm_bool a, gm_bool b) {
    switch (op) {
    case GM_OP_BITWISE_AND:
        return (gm_bool)(a && b);
    case GM_OP_BITWISE_OR:
        return (gm_bool)(a || b);
    default:
        return (gm_bool)(a != b);
    }
}
GM_FN gm_bool gm_unary_b8(int op, gm_bool x) {
    return op == GM_OP_BITWISE_NOT ? (gm_bool)!x : x;
}

// ---------------------------------------------------------------------------------------------
// Floating point. The transcendental kernels (gm_exp_*, …) sit in one block per type below; the
// rest is the same for both types, written once as a macro over (type, suffix, literal suffix).
// ---------------------------------------------------------------------------------------------
#define GM_LIT_f32(x) x##f
#define GM_LIT_f64(x) x

#define GM_DEFINE_REAL(R, S, L)                                                                    \
    GM_FN int gm_is_nan_##S(R x) {                                                                 \
        return x != x;                                                                             \
    }                                                                                              \
    /* maximum/minimum propagate NaN from either side (torch.maximum). */                          \
    GM_FN R gm_nan_max_##S(R a, R b) {                                                             \
        if (a != a || b != b)                                                                      \
            return a != a ? a : b;                                                                 \
        return a > b ? a : b;                                                                      \
    }                                                                                              \
    GM_FN R gm_nan_min_##S(R a, R b) {                                                             \
        if (a != a || b != b)                                                                      \
            return a != a ? a : b;                                                                 \
        return a < b ? a : b;                                                                      \
    }                                                                                              \
    /* PyTorch's div_floor_floating: a / b for b == 0, else floor((a - fmod(a, b)) / b). */        \
    GM_FN R gm_floor_divide_##S(R a, R b) {                                                        \
        if (b == 0)                                                                                \
            return a / b;                                                                          \
        R mod = GM_FMOD(a, b);                                                                     \
        R div = (a - mod) / b;                                                                     \
        if (mod != 0 && (b < 0) != (mod < 0))                                                      \
            div -= L(1.0);                                                                         \
        if (div == 0)                                                                              \
            return GM_COPYSIGN((R)0, a / b);                                                       \
        R floored = GM_FLOOR(div);                                                                 \
        if (div - floored > L(0.5))                                                                \
            floored += L(1.0);                                                                     \
        return floored;                                                                            \
    }                                                                                              \
    /* fmod moved to the divisor's sign; b == 0 gives NaN. */                                      \
    GM_FN R gm_remainder_##S(R a, R b) {                                                           \
        R mod = GM_FMOD(a, b);                                                                     \
        if (mod != 0 && (b < 0) != (mod < 0))                                                      \
            mod += b;                                                                              \
        return mod;                                                                                \
    }                                                                                              \
    GM_FN R gm_gelu_##S(R x, int tanh_form) {                                                      \
        if (tanh_form) {                                                                           \
            R inner = L(0.7978845608028654) * (x + L(0.044715) * x * x * x);                       \
            return L(0.5) * x * (L(1.0) + gm_tanh_##S(inner));                                     \
        }                                                                                          \
        return L(0.5) * x * (L(1.0) + gm_erf_##S(x * L(0.7071067811865476)));                      \
    }                                                                                              \
    GM_FN R gm_binary_##S(int op, R a, R b) {                                                      \
        switch (op) {                                                                              \
        case GM_OP_ADD:                                                                            \
            return a + b;                                                                          \
        case GM_OP_SUB:                                                                            \
            return a - b;                                                                          \
        case GM_OP_MUL:                                                                            \
            return a * b;                                                                          \
        case GM_OP_DIV:                                                                            \
            return a / b;                                                                          \
        case GM_OP_POW:                                                                            \
            return gm_pow_##S(a, b);                                                               \
        case GM_OP_MAXIMUM:                                                                        \
            return gm_nan_max_##S(a, b);                                                           \
        case GM_OP_MINIMUM:                                                                        \
            return gm_nan_min_##S(a, b);                                                           \
        case GM_OP_FLOOR_DIVIDE:                                                                   \
            return gm_floor_divide_##S(a, b);                                                      \
        default:                                                                                   \
            return gm_remainder_##S(a, b);                                                         \
        }                                                                                          \
    }                                                                                              \
    GM_FN R gm_unary_##S(int op, R x, int tanh_gelu) {                                             \
        switch (op) {                                                                              \
        case GM_OP_NEG:                                                                            \
            return -x;                                                                             \
        case GM_OP_ABS:                                                                            \
            return GM_FABS(x);                                                                     \
        case GM_OP_EXP:                                                                            \
            return gm_exp_##S(x);                                                                  \
        case GM_OP_LOG:                                                                            \
            return gm_log_##S(x);                                                                  \
        case GM_OP_SQRT:                                                                           \
            return GM_SQRT(x);                                                                     \
        case GM_OP_RSQRT:                                                                          \
            return L(1.0) / GM_SQRT(x);                                                            \
        case GM_OP_TANH:                                                                           \
            return gm_tanh_##S(x);                                                                 \
        case GM_OP_SIGMOID:                                                                        \
            return gm_sigmoid_##S(x);                                                              \
        case GM_OP_ERF:                                                                            \
            return gm_erf_##S(x);                                                                  \
        case GM_OP_LGAMMA:                                                                         \
            return gm_lgamma_##S(x);                                                               \
        case GM_OP_RELU:                                                                           \
            return x != x ? x : (x > 0 ? x : (R)0);                                                \
        case GM_OP_GELU:                                                                           \
            return gm_gelu_##S(x, tanh_gelu);                                                      \
        default:                                                                                   \
            return x;                                                                              \
        }                                                                                          \
    }

// Comparisons and logic of any type (→ 0/1); NaN is truthy, IEEE comparisons.
#define GM_DEFINE_PREDICATE(T, S)                                                                  \
    GM_FN int gm_predicate_##S(int op, T a, T b) {                                                 \
        switch (op) {                                                                              \
        case GM_OP_EQ:                                                                             \
            return a == b;                                                                         \
        case GM_OP_NE:                                                                             \
            return a != b;                                                                         \
        case GM_OP_LT:                                                                             \
            return a < b;                                                                          \
        case GM_OP_LE:                                                                             \
            return a <= b;                                                                         \
        case GM_OP_GT:                                                                             \
            return a > b;                                                                          \
        case GM_OP_GE:                                                                             \
            return a >= b;                                                                         \
        case GM_OP_LOGICAL_AND:                                                                    \
            return a != (T)0 && b != (T)0;                                                         \
        case GM_OP_LOGICAL_OR:                                                                     \
            return a != (T)0 || b != (T)0;                                                         \
        default:                                                                                   \
            return (a != (T)0) != (b != (T)0);                                                     \
        }                                                                                          \
    }

GM_DEFINE_PREDICATE(gm_i32, i32)
GM_DEFINE_PREDICATE(gm_i64, i64)
GM_DEFINE_PREDICATE(gm_bool, b8)
GM_DEFINE_PREDICATE(float, f32)

#ifdef GM_OPENCL
#define GM_TABLE __constant
#define GM_RINT(x) rint(x)
#define GM_FREXP(x, e) frexp(x, e)
#else
#define GM_TABLE inline constexpr
#define GM_RINT(x) std::rint(x)
#define GM_FREXP(x, e) std::frexp(x, e)
#endif

#if !defined(GM_OPENCL) || defined(GM_FP64)
// f64 transcendentals: range reduction and polynomials in plain double arithmetic (every constant
// from kernels/make_math_tables.py), so the CPU and any fp64 OpenCL device compute the same bits.
// Measured errors against a long-double reference: tests/reference/test_goblin_math.cpp.

#define GM_LN2_HI 0.6931471803691238 // ln 2 to 32 bits: k·GM_LN2_HI is exact
#define GM_LN2_LO 1.9082149292705877e-10
#define GM_INV_LN2 1.4426950408889634

// The polynomial cores below are written once over a type V: double here, and four lanes of
// doubles in the C++ batches (lib/reference/src/batch_math.cpp), with the same operations in the
// same order for both (the first step is C₁ + r·C₀, which is what q = C₀; q = C₁ + r·q computes).

// expm1 on the reduced range |r| <= ln2/2: r + r²·(1/2! + r/3! + … + r¹¹/13!).
#define GM_DEFINE_EXPM1_REDUCED(V, NAME)                                                           \
    GM_FN V NAME(V r) {                                                                            \
        V q = 2.08767569878681e-09 + r * 1.6059043836821613e-10;                                   \
        q = 2.505210838544172e-08 + r * q;                                                         \
        q = 2.755731922398589e-07 + r * q;                                                         \
        q = 2.7557319223985893e-06 + r * q;                                                        \
        q = 2.48015873015873e-05 + r * q;                                                          \
        q = 0.0001984126984126984 + r * q;                                                         \
        q = 0.001388888888888889 + r * q;                                                          \
        q = 0.008333333333333333 + r * q;                                                          \
        q = 0.041666666666666664 + r * q;                                                          \
        q = 0.16666666666666666 + r * q;                                                           \
        q = 0.5 + r * q;                                                                           \
        return r + (r * r) * q;                                                                    \
    }
GM_DEFINE_EXPM1_REDUCED(double, gm_expm1_reduced_f64)

// erf(x) for |x| < 0.25: x·(its Taylor series at 0 in x²).
#define GM_DEFINE_ERF_NEAR0(V, NAME)                                                               \
    GM_FN V NAME(V x) {                                                                            \
        const V z = x * x;                                                                         \
        V p = 1.6462114365889248e-06 + z * -1.6365844691234924e-07;                                \
        p = -1.492565035840625e-05 + z * p;                                                        \
        p = 0.00012055332981789664 + z * p;                                                        \
        p = -0.0008548327023450853 + z * p;                                                        \
        p = 0.005223977625442188 + z * p;                                                          \
        p = -0.026866170645131252 + z * p;                                                         \
        p = 0.11283791670955126 + z * p;                                                           \
        p = -0.37612638903183754 + z * p;                                                          \
        p = 1.1283791670955126 + z * p;                                                            \
        return x * p;                                                                              \
    }
GM_DEFINE_ERF_NEAR0(double, gm_erf_near0_f64)

// exp(x) = 2^k · exp(r), x = k·ln2 + r (Cody–Waite: r = (x − k·LN2_HI) − k·LN2_LO).
GM_FN double gm_exp_f64(double x) {
    if (x != x)
        return x;
    if (x > 709.782712893384)
        return INFINITY;
    if (x < -745.1332191019412)
        return 0.0;
    const double k = GM_RINT(x * GM_INV_LN2);
    const double r = (x - k * GM_LN2_HI) - k * GM_LN2_LO;
    return GM_LDEXP(1.0 + gm_expm1_reduced_f64(r), (int)k);
}

// expm1(x) = 2^k·(1 + expm1(r)) − 1 = (2^k − 1) + 2^k·expm1(r), exact 2^k − 1 for |k| <= 52.
GM_FN double gm_expm1_f64(double x) {
    if (x != x || GM_FABS(x) < 5.551115123125783e-17)
        return x;
    if (x > 709.782712893384)
        return INFINITY;
    if (x < -38.0)
        return -1.0;
    const double k = GM_RINT(x * GM_INV_LN2);
    if (k == 0.0)
        return gm_expm1_reduced_f64(x);
    const double s = gm_expm1_reduced_f64((x - k * GM_LN2_HI) - k * GM_LN2_LO);
    if (k > 52.0)
        return GM_LDEXP(1.0 + s, (int)k);
    return (GM_LDEXP(1.0, (int)k) - 1.0) + GM_LDEXP(s, (int)k);
}

// log(x) = k·ln2 + log(1 + f), 1 + f in [√½, √2); with s = f/(2 + f),
// log(1 + f) = 2·atanh(s) = f − s·(f − R), R = 2·(s²/3 + s⁴/5 + … + s²²/23).
GM_FN double gm_log_f64(double x) {
    if (x != x || x < 0.0)
        return NAN;
    if (x == 0.0)
        return -INFINITY;
    if (x == INFINITY)
        return x;
    int e = 0;
    double m = GM_FREXP(x, &e);
    if (m < 0.7071067811865476) {
        m = m * 2.0;
        e = e - 1;
    }
    const double f = m - 1.0;
    const double s = f / (2.0 + f);
    const double z = s * s;
    double r = 0.08695652173913043;
    r = 0.09523809523809523 + z * r;
    r = 0.10526315789473684 + z * r;
    r = 0.11764705882352941 + z * r;
    r = 0.13333333333333333 + z * r;
    r = 0.15384615384615385 + z * r;
    r = 0.18181818181818182 + z * r;
    r = 0.2222222222222222 + z * r;
    r = 0.2857142857142857 + z * r;
    r = 0.4 + z * r;
    r = 0.6666666666666666 + z * r;
    r = z * r;
    const double k = (double)e;
    return k * GM_LN2_HI + ((f - s * (f - r)) + k * GM_LN2_LO);
}

// tanh(|x|) = t/(t + 2), t = expm1(2|x|).
GM_FN double gm_tanh_f64(double x) {
    const double a = GM_FABS(x);
    if (x != x || a < 3.725290298461914e-09)
        return x;
    if (a > 22.0)
        return GM_COPYSIGN(1.0, x);
    const double t = gm_expm1_f64(2.0 * a);
    return GM_COPYSIGN(t / (t + 2.0), x);
}

// erf: Taylor series at 0 below 0.25; Taylor series at the centres of 12 intervals of width 0.25
// up to 3.25; above, 1 − erfc with erfc from its continued fraction and exp(−x²) from an exact
// (Dekker) square.
GM_TABLE double gm_erf_taylor_f64[12 * 16] = {
    0.4041169094348223,      0.9803528095459079,      -0.36763230357971544,
    -0.2348761939537071,     0.16658338755955857,     0.04547535005217834,
    -0.050106655439071245,   -0.005458894072522925,   0.011248911770528577,
    0.00012404231100207624,  -0.0020091097103080136,  0.00011668692026611574,
    0.00029711762965124863,  -3.3597249440485794e-05, -3.738049411860017e-05,
    6.028684160466345e-06,   0.623240882188418,       0.7634995357606049,
    -0.47718720985037805,    -0.055671841149210775,   0.1764598536425877,
    -0.027413411065883696,   -0.04134483366596429,    0.01391000864651355,
    0.0066861683631174625,   -0.0036333583983661714,  -0.0007344823536473329,
    0.0006780134599198432,   4.06588030230971e-05,    -9.952678309989107e-05,
    3.5247195209829643e-06,  1.2028636995142695e-05,  0.7840750610598597,
    0.5247450452901482,      -0.45915191462887966,    0.09292360177013041,
    0.11239656243519451,     -0.0672158773833572,     -0.010367785745906018,
    0.018595726765847267,    -0.0018461468559063715,  -0.0032568627602662854,
    0.000898154868541066,    0.0003900529044120407,   -0.00019296678621782653,
    -2.903116273391371e-05,  2.9075064952881173e-05,  2.0224352255317938e-07,
    0.8883882317017078,      0.3182739585007693,      -0.35805820331336546,
    0.16245233298476766,     0.027973297133856677,    -0.061323683605665806,
    0.015536835449762896,    0.009606894225829976,    -0.006031260883106729,
    -0.0003601919898013683,  0.0011532673547020597,   -0.0001769550878579247,
    -0.0001415583990117997,  4.9455696834570095e-05,  1.0718804636659436e-05,
    -7.730906970255213e-06,  0.9481700727820903,      0.1703597736875156,
    -0.23424468882033395,    0.15793770685613426,     -0.03050061052348098,
    -0.030605976268925736,   0.022161235262852557,    -0.001419062360662139,
    -0.004261033441276509,   0.001577911232741016,    0.00032359146722315554,
    -0.0003391015230725006,  2.8681755518788118e-05,  4.175471522740388e-05,
    -1.1984028581486832e-05, -2.9725595025012275e-06, 0.9784437332399837,
    0.08047225902251116,     -0.13076742091158064,    0.11484061964670864,
    -0.049718863159090555,   -0.0021349248406037306,  0.014414781131084502,
    -0.006184261515478821,   -0.000576525430283408,   0.0014106850333898903,
    -0.00035597922602355293, -0.00012566368868411414, 8.79701620524859e-05,
    -4.270738262797687e-06,  -1.0609039547562964e-05, 2.8273833059374034e-06,
    0.9919900576701199,      0.03354582842421607,     -0.06289842829540514,
    0.0674410925611844,      -0.04225988151097533,    0.011462583364876176,
    0.004105187133212477,    -0.004928393908239107,   0.001430501687370122,
    0.00036225644575338666,  -0.0003901575782455417,  7.37299378240623e-05,
    3.607417901263836e-05,   -2.0803824921141647e-05, 8.154185088040366e-07,
    2.3718570297022424e-06,  0.9973459706405177,      0.012340820614333696,
    -0.026224243805459103,   0.033037405186289164,    -0.026360828408612536,
    0.012495482591433906,    -0.0018214125933023405,  -0.0018692572567887945,
    0.0013833456162338344,   -0.0002897798521792673,  -0.00012277167237649306,
    9.485303104752515e-05,   -1.4992013287438935e-05, -8.475474393501074e-06,
    4.549880654612466e-06,   -2.397884034210181e-07,  0.9992170617821089,
    0.004006477861670219,    -0.009515384921466771,   0.013730533505098981,
    -0.013133213563482782,   0.00835739283377895,     -0.0031140790431462596,
    0.0001232696283780691,   0.0005941113102532914,   -0.00033752784148497275,
    5.4705936215888043e-05,  3.1608810695225705e-05,  -2.0800599114722e-05,
    3.1425661169499264e-06,  1.6767083573168686e-06,  -9.200372609631897e-07,
    0.9997946242638588,      0.001147875125882675,    -0.003013172205442022,
    0.004890426317562647,    -0.005414293806653633,   0.004217880601717521,
    -0.0022468338447285286,  0.0006808680974231771,   3.464470636501039e-05,
    -0.00015260043098965162, 7.395616736023192e-05,   -1.0326282078167697e-05,
    -6.687731493867075e-06,  4.157085191239199e-06,   -6.770082881827777e-07,
    -2.7773383709897626e-07, 0.9999521451602562,      0.00029022828286249803,
    -0.0008344063132296819,  0.001502536006069391,    -0.001881760070981522,
    0.0017132632798079331,   -0.0011400746242208634,  0.0005285700413700108,
    -0.00013560801204451028, -1.6139055904620542e-05, 3.338804817529197e-05,
    -1.4811906943601079e-05, 2.0385768990676424e-06,  1.1871804277151051e-06,
    -7.564152887325688e-07,  1.429749505827574e-07,   0.9999901032653747,
    6.475868323471298e-05,   -0.00020237088510847805, 0.0004000197828977583,
    -0.0005575739490749213,  0.0005769615014743242,   -0.00045231517761577534,
    0.00026648105109162697,  -0.00011126364024766743, 2.5450656904174918e-05,
    3.873542145587109e-06,   -6.36552916703948e-06,   2.7284794494107734e-06,
    -4.1406613481371433e-07, -1.7494853479255093e-07, 1.241605538071656e-07,
};

GM_FN double gm_erf_f64(double x) {
    const double a = GM_FABS(x);
    if (x != x || a < 3.725290298461914e-09)
        return x != x ? x : 1.1283791670955126 * x;
    if (a >= 6.0)
        return GM_COPYSIGN(1.0, x);
    if (a < 0.25)
        return gm_erf_near0_f64(x);
    if (a < 3.25) {
        const int interval = (int)((a - 0.25) * 4.0);
        const double h = a - (0.25 + 0.25 * ((double)interval + 0.5));
        const int base = interval * 16;
        double p = gm_erf_taylor_f64[base + 15];
        for (int k = 14; k >= 1; --k)
            p = gm_erf_taylor_f64[base + k] + h * p;
        return GM_COPYSIGN(gm_erf_taylor_f64[base] + h * p, x);
    }
    // a² = hi + lo exactly (Veltkamp split, no FMA needed).
    const double hi = a * a;
    const double c = 134217729.0 * a;
    const double ah = c - (c - a);
    const double al = a - ah;
    const double lo = ((ah * ah - hi) + 2.0 * ah * al) + al * al;
    const double g = gm_exp_f64(-hi) * (1.0 - lo);
    double f = a;
    for (int n = 40; n >= 1; --n)
        f = a + ((double)n * 0.5) / f;
    return GM_COPYSIGN(1.0 - (g * 0.5641895835477563) / f, x);
}

GM_FN double gm_sigmoid_f64(double x) {
    return 1.0 / (1.0 + gm_exp_f64(-x));
}
// Error-free transformations without FMA (Dekker; Veltkamp split): a·b = p + e, a + b = s + e.
GM_FN double gm_two_prod_f64(double a, double b, double* e) {
    const double p = a * b;
    double c = 134217729.0 * a;
    const double ah = c - (c - a);
    const double al = a - ah;
    c = 134217729.0 * b;
    const double bh = c - (c - b);
    const double bl = b - bh;
    *e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    return p;
}
GM_FN double gm_two_sum_f64(double a, double b, double* e) {
    const double s = a + b;
    const double bb = s - a;
    *e = (a - (s - bb)) + (b - bb);
    return s;
}

// log(x) for finite x > 0 as hi + lo (about 2⁻¹⁰⁰ relative): gm_log_f64's reduction with 2s kept
// in double-double (s = f/(2 + f) refined by its exact residual).
GM_FN double gm_log_dd_f64(double x, double* lo) {
    int e = 0;
    double m = GM_FREXP(x, &e);
    if (m < 0.7071067811865476) {
        m = m * 2.0;
        e = e - 1;
    }
    const double f = m - 1.0;
    const double dh = 2.0 + f;
    const double dl = f - (dh - 2.0);
    const double sh = f / dh;
    double pe = 0.0;
    const double p = gm_two_prod_f64(sh, dh, &pe);
    const double sl = (((f - p) - pe) - sh * dl) / dh;
    const double z = sh * sh;
    double r = 0.08695652173913043;
    r = 0.09523809523809523 + z * r;
    r = 0.10526315789473684 + z * r;
    r = 0.11764705882352941 + z * r;
    r = 0.13333333333333333 + z * r;
    r = 0.15384615384615385 + z * r;
    r = 0.18181818181818182 + z * r;
    r = 0.2222222222222222 + z * r;
    r = 0.2857142857142857 + z * r;
    r = 0.4 + z * r;
    r = 0.6666666666666666 + z * r;
    const double k = (double)e;
    double b = 0.0;
    const double a = gm_two_sum_f64(k * GM_LN2_HI, 2.0 * sh, &b);
    const double tail = b + (k * GM_LN2_LO + (2.0 * sl + sh * (z * r)));
    return gm_two_sum_f64(a, tail, lo);
}

// C pow: the IEEE special cases, then exp(y·log|x|) with the product in double-double and a sign
// for negative x and odd integer y.
GM_FN double gm_pow_f64(double x, double y) {
    if (y == 0.0 || x == 1.0)
        return 1.0;
    if (x != x || y != y)
        return NAN;
    const int integral = y == GM_FLOOR(y);
    const int odd = integral && GM_FABS(y) < 9007199254740992.0 && GM_FMOD(y, 2.0) != 0.0;
    const double ax = GM_FABS(x);
    const int negative = GM_COPYSIGN(1.0, x) < 0.0;
    if (ax == INFINITY || x == 0.0) {
        const double r = (ax == INFINITY) == (y > 0.0) ? INFINITY : 0.0;
        return negative && odd ? -r : r;
    }
    if (GM_FABS(y) == INFINITY) {
        if (ax == 1.0)
            return 1.0;
        return (ax > 1.0) == (y > 0.0) ? INFINITY : 0.0;
    }
    if (x < 0.0 && !integral)
        return NAN;
    double ll = 0.0;
    const double lh = gm_log_dd_f64(ax, &ll);
    double ph = y * lh;
    double pl = 0.0;
    if (GM_FABS(ph) <
        800.0) // beyond, exp over/underflows anyway (and |y| < 2⁶³ keeps the split finite)
        ph = gm_two_prod_f64(y, lh, &pl);
    pl = pl + y * ll;
    double r = 0.0;
    if (ph > 709.8)
        r = INFINITY;
    else if (ph >= -745.2) {
        const double e = gm_exp_f64(ph);
        r = e + e * pl;
    }
    return negative && odd ? -r : r;
}

// lgamma: series at 2 on [1.5, 2.5) (lgamma(2 + z) = (1 − γ)z + Σ (−1)^k (ζ(k) − 1)/k·z^k),
// recurrences down to it below 8, Stirling above, reflection for x < 0 with an own |sin(πx)|.
GM_TABLE double gm_lgamma_near2_f64[30] = {
    0.3224670334241132,     -0.0673523010531981,     0.020580808427784546,
    -0.007385551028673986,  0.0028905103307415234,   -0.001192753911703261,
    0.0005096695247430425,  -0.00022315475845357939, 9.945751278180853e-05,
    -4.492623673813314e-05, 2.050721277567069e-05,   -9.439488275268397e-06,
    4.374866789907488e-06,  -2.039215753801366e-06,  9.55141213040742e-07,
    -4.492469198764566e-07, 2.1207184805554665e-07,  -1.0043224823968099e-07,
    4.7698101693639804e-08, -2.2711094608943164e-08, 1.0838659214896955e-08,
    -5.183475041970047e-09, 2.4836745438024785e-09,  -1.1921401405860912e-09,
    5.731367241678862e-10,  -2.7595228851242334e-10, 1.330476437424449e-10,
    -6.4229645638381e-11,   3.1044247747322276e-11,  -1.5021384080754142e-11};
GM_TABLE double gm_stirling_f64[9] = {
    0.08333333333333333,    -0.002777777777777778, 0.0007936507936507937,
    -0.0005952380952380953, 0.0008417508417508417, -0.0019175269175269176,
    0.00641025641025641,    -0.029550653594771242, 0.17964437236883057};
GM_TABLE double gm_sin_taylor_f64[10] = {
    -0.16666666666666666,   0.008333333333333333,   -0.0001984126984126984, 2.7557319223985893e-06,
    -2.505210838544172e-08, 1.6059043836821613e-10, -7.647163731819816e-13, 2.8114572543455206e-15,
    -8.22063524662433e-18,  1.9572941063391263e-20};
GM_TABLE double gm_cos_taylor_f64[10] = {-0.5,
                                         0.041666666666666664,
                                         -0.001388888888888889,
                                         2.48015873015873e-05,
                                         -2.755731922398589e-07,
                                         2.08767569878681e-09,
                                         -1.1470745597729725e-11,
                                         4.779477332387385e-14,
                                         -1.5619206968586225e-16,
                                         4.110317623312165e-19};

GM_FN double gm_lgamma_near2_series_f64(double z) {
    double p = gm_lgamma_near2_f64[29];
    for (int k = 28; k >= 0; --k)
        p = gm_lgamma_near2_f64[k] + z * p;
    return z * (0.42278433509846713 + z * p);
}

// lgamma(y) for y >= 0.5 (finite).
GM_FN double gm_lgamma_from_half_f64(double y) {
    if (y < 1.5)
        return gm_lgamma_near2_series_f64((y + 1.0) - 2.0) - gm_log_f64(y);
    if (y < 8.0) {
        double product = 1.0;
        while (y >= 2.5) {
            y = y - 1.0;
            product = product * y;
        }
        return gm_lgamma_near2_series_f64(y - 2.0) + gm_log_f64(product);
    }
    const double inv = 1.0 / y;
    const double z = inv * inv;
    double s = gm_stirling_f64[8];
    for (int k = 7; k >= 0; --k)
        s = gm_stirling_f64[k] + z * s;
    return ((y - 0.5) * gm_log_f64(y) - y) + (0.9189385332046728 + inv * s);
}

// |sin(πx)| for finite non-integer x: reduced to t in (0, ½] exactly, then a sine or cosine series.
GM_FN double gm_abs_sinpi_f64(double x) {
    const double a = GM_FABS(x);
    double t = a - 2.0 * GM_FLOOR(a * 0.5);
    if (t >= 1.0)
        t = t - 1.0;
    if (t > 0.5)
        t = 1.0 - t;
    const int sine = t <= 0.25;
    const double u = 3.141592653589793 * (sine ? t : 0.5 - t);
    const double z = u * u;
    double p = sine ? gm_sin_taylor_f64[9] : gm_cos_taylor_f64[9];
    for (int k = 8; k >= 0; --k)
        p = (sine ? gm_sin_taylor_f64[k] : gm_cos_taylor_f64[k]) + z * p;
    return sine ? u + u * (z * p) : 1.0 + z * p;
}

GM_FN double gm_lgamma_f64(double x) {
    if (x != x)
        return x;
    if (GM_FABS(x) == INFINITY || (x <= 0.0 && x == GM_FLOOR(x)))
        return INFINITY;
    if (x < 0.0)
        return gm_log_f64(3.141592653589793 / gm_abs_sinpi_f64(x)) -
               gm_lgamma_from_half_f64(1.0 - x);
    if (x < 8.673617379884035e-19)
        return -gm_log_f64(x);
    if (x < 0.5)
        return gm_lgamma_from_half_f64(x + 1.0) - gm_log_f64(x);
    return gm_lgamma_from_half_f64(x);
}
GM_DEFINE_REAL(double, f64, GM_LIT_f64)
GM_DEFINE_PREDICATE(double, f64)
#endif

// f32 transcendentals: the f64 functions rounded once (the platform's where a device lacks fp64).
#if !defined(GM_OPENCL) || defined(GM_FP64)
GM_FN float gm_exp_f32(float x) {
    return (float)gm_exp_f64((double)x);
}
GM_FN float gm_log_f32(float x) {
    return (float)gm_log_f64((double)x);
}
GM_FN float gm_tanh_f32(float x) {
    return (float)gm_tanh_f64((double)x);
}
GM_FN float gm_erf_f32(float x) {
    return (float)gm_erf_f64((double)x);
}
GM_FN float gm_lgamma_f32(float x) {
    return (float)gm_lgamma_f64((double)x);
}
GM_FN float gm_pow_f32(float x, float y) {
    return (float)gm_pow_f64((double)x, (double)y);
}
#else
GM_FN float gm_exp_f32(float x) {
    return GM_PLATFORM_EXP(x);
}
GM_FN float gm_log_f32(float x) {
    return GM_PLATFORM_LOG(x);
}
// Saturated ends are ours (tanh, erf = ±1 in f32 beyond 9.5 and 4): some builtins miss them at
// ±inf.
GM_FN float gm_tanh_f32(float x) {
    return GM_FABS(x) >= 9.5f ? GM_COPYSIGN(1.0f, x) : GM_PLATFORM_TANH(x);
}
GM_FN float gm_erf_f32(float x) {
    return GM_FABS(x) >= 4.0f ? GM_COPYSIGN(1.0f, x) : GM_PLATFORM_ERF(x);
}
GM_FN float gm_lgamma_f32(float x) {
    return GM_PLATFORM_LGAMMA(x);
}
GM_FN float gm_pow_f32(float x, float y) {
    return GM_PLATFORM_POW(x, y);
}
#endif
// In f32 as PyTorch computes it: exp(−x) overflows for x < −88.7 and the result is 0.
GM_FN float gm_sigmoid_f32(float x) {
    return 1.0f / (1.0f + gm_exp_f32(-x));
}
GM_DEFINE_REAL(float, f32, GM_LIT_f32)

// ---------------------------------------------------------------------------------------------
// cast: float → integer truncates, NaN → 0, out of range saturates; integer → narrower wraps;
// → bool is x != 0 (NaN → true). Conversions to float round to nearest (both languages' default).
// ---------------------------------------------------------------------------------------------
#define GM_DEFINE_FLOAT_TO_INT(R, RS, I, IS, IMIN, IMAX)                                           \
    GM_FN I gm_cast_##RS##_to_##IS(R x) {                                                          \
        if (x != x)                                                                                \
            return 0;                                                                              \
        if (x <= (R)IMIN)                                                                          \
            return IMIN;                                                                           \
        if (x >= (R)IMAX)                                                                          \
            return IMAX;                                                                           \
        return (I)x;                                                                               \
    }

GM_DEFINE_FLOAT_TO_INT(float, f32, gm_i32, i32, GM_I32_MIN, GM_I32_MAX)
GM_DEFINE_FLOAT_TO_INT(float, f32, gm_i64, i64, GM_I64_MIN, GM_I64_MAX)
#if !defined(GM_OPENCL) || defined(GM_FP64)
GM_DEFINE_FLOAT_TO_INT(double, f64, gm_i32, i32, GM_I32_MIN, GM_I32_MAX)
GM_DEFINE_FLOAT_TO_INT(double, f64, gm_i64, i64, GM_I64_MIN, GM_I64_MAX)
#endif

#ifndef GM_OPENCL
} // namespace goblin::reference::math
#endif

#endif // GOBLIN_MATH_H
