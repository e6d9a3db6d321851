// The matmul reference of the tests: the worst error of a product against a float64 triple loop,
// as a fraction of the sound bound γ_K·(|A||B|). Any thread.
#pragma once

#include <algorithm>
#include <cmath>

#include "goblin/core/tensor.hpp"

namespace goblin::testing {

inline double elementAt(const core::Tensor& t, std::int64_t index) {
    const auto at = static_cast<std::size_t>(index);
    return t.dtype() == core::DType::F32 ? static_cast<double>(t.values<float>()[at])
                                         : t.values<double>()[at];
}

inline double gammaOf(std::int64_t n, double u) {
    return static_cast<double>(n) * u / (1.0 - static_cast<double>(n) * u);
}

struct ProductErrors {
    double worstRatio = 0.0;     // max |C − A·B| / (γ_K·|A||B|) (≤ 1 passes)
    double worstPairRatio = 0.0; // max |C − C₂| / (2·γ_K·|A||B|) against a second product
};

// Compares c (and optionally a second product `other`, e.g. the Eigen backend's) with a float64
// triple loop. The reference's own rounding γ_K(2⁻⁵³) is allowed on top.
inline ProductErrors productErrors(const core::Tensor& a, const core::Tensor& b,
                                   const core::Tensor& c, const core::Tensor* other = nullptr) {
    const std::int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
    const double u = a.dtype() == core::DType::F32 ? 0x1p-24 : 0x1p-53;
    const double factor = gammaOf(k, u) + gammaOf(k, 0x1p-53);
    ProductErrors errors;
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
            double exact = 0.0, magnitude = 0.0;
            for (std::int64_t p = 0; p < k; ++p) {
                const double x = elementAt(a, i * k + p);
                const double y = elementAt(b, p * n + j);
                exact += x * y;
                magnitude += std::fabs(x) * std::fabs(y);
            }
            const double value = elementAt(c, i * n + j);
            errors.worstRatio =
                std::max(errors.worstRatio, std::fabs(value - exact) / (factor * magnitude));
            if (other)
                errors.worstPairRatio = std::max(errors.worstPairRatio,
                                                 std::fabs(value - elementAt(*other, i * n + j)) /
                                                     (2 * factor * magnitude));
            if (!std::isfinite(value))
                errors.worstRatio = INFINITY;
        }
    }
    return errors;
}

} // namespace goblin::testing
