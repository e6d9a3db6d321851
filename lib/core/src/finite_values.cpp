#include "goblin/core/finite_values.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "goblin/core/cpu_clones.hpp"

namespace goblin::core {
namespace {

// ~bits & exponent is zero exactly when the exponent is all ones (NaN, ±Inf): the minimum over
// the run is zero iff one value is not finite.
template <class T, class Bits, Bits kExponent>
[[gnu::always_inline]] inline bool finiteBody(std::span<const T> values) {
    static_assert(sizeof(T) == sizeof(Bits));
    Bits lowest = kExponent;
    for (const T& value : values) {
        Bits bits;
        std::memcpy(&bits, &value, sizeof bits);
        lowest = std::min<Bits>(lowest, ~bits & kExponent);
    }
    return lowest != 0;
}

} // namespace

GOBLIN_CPU_CLONES bool allFinite(std::span<const float> values) {
    return finiteBody<float, std::uint32_t, 0x7f800000u>(values);
}

GOBLIN_CPU_CLONES bool allFinite(std::span<const double> values) {
    return finiteBody<double, std::uint64_t, 0x7ff0000000000000u>(values);
}

} // namespace goblin::core
