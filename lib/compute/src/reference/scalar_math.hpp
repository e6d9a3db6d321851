// Private: the per-element semantics of the catalog (docs/ops.md): PyTorch's rounding and sign rules
// for integer division, NaN propagation, wrapping two's-complement integer overflow. Any thread.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace goblin::compute::reference::detail {

template <class T> constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Two's-complement wrapping arithmetic, computed in the unsigned type (no UB).
template <class T> T wrapAdd(T a, T b) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <class T> T wrapSub(T a, T b) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <class T> T wrapMul(T a, T b) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}
template <class T> T wrapNeg(T a) { return wrapSub(T{0}, a); }

// Floor division; the caller has refused b == 0. MIN / -1 wraps to MIN.
template <class T> T intFloorDivide(T a, T b) {
    if (b == -1)
        return wrapNeg(a);
    const T quotient = static_cast<T>(a / b);
    const bool inexact = static_cast<T>(a % b) != 0;
    return inexact && ((a < 0) != (b < 0)) ? static_cast<T>(quotient - 1) : quotient;
}

// Remainder with the divisor's sign (Python/PyTorch); the caller has refused b == 0.
template <class T> T intRemainder(T a, T b) {
    if (b == -1)
        return 0;
    const T r = static_cast<T>(a % b);
    return r != 0 && ((r < 0) != (b < 0)) ? static_cast<T>(r + b) : r;
}

// PyTorch's div_floor_floating: IEEE a / b for b == 0, otherwise floor((a - fmod(a, b)) / b).
template <class T> T floatFloorDivide(T a, T b) {
    if (b == 0)
        return a / b;
    const T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0))
        div -= T(1);
    if (div == 0)
        return std::copysign(T(0), a / b);
    T floored = std::floor(div);
    if (div - floored > T(0.5))
        floored += T(1);
    return floored;
}

// fmod moved to the divisor's sign; b == 0 gives NaN.
template <class T> T floatRemainder(T a, T b) {
    T mod = std::fmod(a, b);
    if (mod != 0 && (b < 0) != (mod < 0))
        mod += b;
    return mod;
}

// maximum/minimum propagate NaN from either side, as torch.maximum does.
template <class T> T nanMax(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(a) || std::isnan(b))
            return std::isnan(a) ? a : b;
    }
    return a > b ? a : b;
}
template <class T> T nanMin(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(a) || std::isnan(b))
            return std::isnan(a) ? a : b;
    }
    return a < b ? a : b;
}

template <class T> bool isNanValue(T value) {
    if constexpr (std::is_floating_point_v<T>)
        return std::isnan(value);
    return false;
}

template <class T> T gelu(T x, bool tanhForm) {
    if (tanhForm) {
        const T inner = T(0.7978845608028654) * (x + T(0.044715) * x * x * x);
        return T(0.5) * x * (T(1) + std::tanh(inner));
    }
    return T(0.5) * x * (T(1) + std::erf(x * T(0.7071067811865476)));
}

} // namespace goblin::compute::reference::detail
