// Private: the per-element semantics of the catalog (docs/ops.md) for the reference kernels, as
// typed C++ wrappers over kernels/goblin_math.h, the header the OpenCL kernels compile too (so both
// backends run the same scalar code). Any thread.
#pragma once

#include <cstdint>
#include <type_traits>

#include "goblin/core/ops/op_code.hpp"
#include "goblin_math.h"

namespace goblin::reference::detail {

namespace gm = goblin::reference::math;

static_assert(GM_OP_ADD == static_cast<int>(core::ops::OpCode::Add) &&
                  GM_OP_REMAINDER == static_cast<int>(core::ops::OpCode::Remainder) &&
                  GM_OP_LOGICAL_XOR == static_cast<int>(core::ops::OpCode::LogicalXor) &&
                  GM_OP_BITWISE_NOT == static_cast<int>(core::ops::OpCode::BitwiseNot) &&
                  GM_OP_ISNAN == static_cast<int>(core::ops::OpCode::IsNan),
              "goblin_math.h's GM_OP_* selectors must equal the OpCode values");

template <class T> constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Internal linkage, like goblin_math.h's functions: each reference unit uses its own copies,
// compiled with its -ffp-contract=off.
namespace {

// Overloads over goblin_math.h's suffixed functions (gm_wrap_add_i32, gm_wrap_add_i64, …), so the
// templated reference kernels call them by type.
namespace overload {
#define GM_OVERLOAD(T, S)                                                                          \
    inline T wrapAdd(T a, T b) {                                                                   \
        return gm::gm_wrap_add_##S(a, b);                                                          \
    }                                                                                              \
    inline T wrapSub(T a, T b) {                                                                   \
        return gm::gm_wrap_sub_##S(a, b);                                                          \
    }                                                                                              \
    inline T wrapMul(T a, T b) {                                                                   \
        return gm::gm_wrap_mul_##S(a, b);                                                          \
    }                                                                                              \
    inline T wrapNeg(T a) {                                                                        \
        return gm::gm_wrap_neg_##S(a);                                                             \
    }                                                                                              \
    inline T floorDivide(T a, T b) {                                                               \
        return gm::gm_floor_divide_##S(a, b);                                                      \
    }                                                                                              \
    inline T remainder(T a, T b) {                                                                 \
        return gm::gm_remainder_##S(a, b);                                                         \
    }                                                                                              \
    inline T binary(int op, T a, T b) {                                                            \
        return gm::gm_binary_##S(op, a, b);                                                        \
    }                                                                                              \
    inline bool predicate(int op, T a, T b) {                                                      \
        return gm::gm_predicate_##S(op, a, b) != 0;                                                \
    }                                                                                              \
    inline T unaryInt(int op, T x) {                                                               \
        return gm::gm_unary_##S(op, x);                                                            \
    }
GM_OVERLOAD(std::int32_t, i32)
GM_OVERLOAD(std::int64_t, i64)
#undef GM_OVERLOAD
#define GM_OVERLOAD(T, S)                                                                          \
    inline T floorDivide(T a, T b) {                                                               \
        return gm::gm_floor_divide_##S(a, b);                                                      \
    }                                                                                              \
    inline T remainder(T a, T b) {                                                                 \
        return gm::gm_remainder_##S(a, b);                                                         \
    }                                                                                              \
    inline T nanMax(T a, T b) {                                                                    \
        return gm::gm_nan_max_##S(a, b);                                                           \
    }                                                                                              \
    inline T nanMin(T a, T b) {                                                                    \
        return gm::gm_nan_min_##S(a, b);                                                           \
    }                                                                                              \
    inline T exp(T x) {                                                                            \
        return gm::gm_exp_##S(x);                                                                  \
    }                                                                                              \
    inline T log(T x) {                                                                            \
        return gm::gm_log_##S(x);                                                                  \
    }                                                                                              \
    inline T gelu(T x, bool tanhForm) {                                                            \
        return gm::gm_gelu_##S(x, tanhForm ? 1 : 0);                                               \
    }                                                                                              \
    inline T unary(int op, T x, bool tanhGelu) {                                                   \
        return gm::gm_unary_##S(op, x, tanhGelu ? 1 : 0);                                          \
    }                                                                                              \
    inline T binary(int op, T a, T b) {                                                            \
        return gm::gm_binary_##S(op, a, b);                                                        \
    }                                                                                              \
    inline bool predicate(int op, T a, T b) {                                                      \
        return gm::gm_predicate_##S(op, a, b) != 0;                                                \
    }
GM_OVERLOAD(float, f32)
GM_OVERLOAD(double, f64)
#undef GM_OVERLOAD
} // namespace overload

template <class T> T wrapAdd(T a, T b) {
    return overload::wrapAdd(a, b);
}
template <class T> T wrapSub(T a, T b) {
    return overload::wrapSub(a, b);
}
template <class T> T wrapMul(T a, T b) {
    return overload::wrapMul(a, b);
}
template <class T> T wrapNeg(T a) {
    return overload::wrapNeg(a);
}

// Floor division and remainder with PyTorch's rounding; integer b == 0 is refused by the caller.
template <class T> T intFloorDivide(T a, T b) {
    return overload::floorDivide(a, b);
}
template <class T> T intRemainder(T a, T b) {
    return overload::remainder(a, b);
}
template <class T> T floatFloorDivide(T a, T b) {
    return overload::floorDivide(a, b);
}
template <class T> T floatRemainder(T a, T b) {
    return overload::remainder(a, b);
}

// maximum/minimum propagate NaN from either side, as torch.maximum does.
template <class T> T nanMax(T a, T b) {
    if constexpr (std::is_floating_point_v<T>)
        return overload::nanMax(a, b);
    else
        return a > b ? a : b;
}
template <class T> T nanMin(T a, T b) {
    if constexpr (std::is_floating_point_v<T>)
        return overload::nanMin(a, b);
    else
        return a < b ? a : b;
}

template <class T> bool isNanValue(T value) {
    if constexpr (std::is_floating_point_v<T>)
        return value != value;
    return false;
}

// exp and log of the shared header (softmax and log_softmax should use these too).
template <class T> T mathExp(T x) {
    return overload::exp(x);
}
template <class T> T mathLog(T x) {
    return overload::log(x);
}

template <class T> T gelu(T x, bool tanhForm) {
    return overload::gelu(x, tanhForm);
}

// One elementwise op on numbers (OpCode selects, as in the OpenCL kernels).
template <class T> T unaryOp(core::ops::OpCode op, T x, bool tanhGelu) {
    if constexpr (std::is_same_v<T, bool>)
        return gm::gm_unary_b8(static_cast<int>(op), x) != 0;
    else if constexpr (std::is_floating_point_v<T>)
        return overload::unary(static_cast<int>(op), x, tanhGelu);
    else
        return overload::unaryInt(static_cast<int>(op), x);
}
template <class T> T binaryOp(core::ops::OpCode op, T a, T b) {
    if constexpr (std::is_same_v<T, bool>)
        return gm::gm_binary_b8(static_cast<int>(op), a, b) != 0;
    else
        return overload::binary(static_cast<int>(op), a, b);
}
template <class T> bool predicateOp(core::ops::OpCode op, T a, T b) {
    if constexpr (std::is_same_v<T, bool>)
        return gm::gm_predicate_b8(static_cast<int>(op), a, b) != 0;
    else
        return overload::predicate(static_cast<int>(op), a, b);
}

} // namespace

} // namespace goblin::reference::detail
