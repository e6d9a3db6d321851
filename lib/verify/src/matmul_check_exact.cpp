#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "goblin/core/cpu_clones.hpp"
#include "matmul_check_detail.hpp"

namespace goblin::verify::detail {
namespace {

using core::DType;
using core::MatrixView;

constexpr double kF64Roundoff = 0x1p-53;

// One row of A·B and |A||B| in float64, by rows of B (vectorised over j). f32 inputs: the products
// are exact in f64 and the sum's error γ_k(2⁻⁵³)·|A||B| is 2⁻²⁹ of the tile's own bound.
template <class T>
[[gnu::always_inline]] inline void plainRowBody(const T* aRow, const MatrixView& b, double* sums,
                                                double* magnitudes) {
    std::fill(sums, sums + b.cols, 0.0);
    std::fill(magnitudes, magnitudes + b.cols, 0.0);
    for (std::int64_t p = 0; p < b.rows; ++p) {
        const auto x = static_cast<double>(aRow[p]);
        const double magnitude = std::fabs(x);
        const T* bRow = b.row<T>(p);
        for (std::int64_t j = 0; j < b.cols; ++j) {
            const auto y = static_cast<double>(bRow[j]);
            sums[j] += x * y;
            magnitudes[j] += magnitude * std::fabs(y);
        }
    }
}

// f64 inputs need more than f64: compensated dot products (Ogita, Rump and Oishi's Dot2, with an
// exact TwoProduct by FMA), kept unrounded as the pair sums + errors, whose error is within
// 2·γ_{2k+2}²·|A||B| (the rounding of the pair to one double, u·|A·B|, is never made).
[[gnu::always_inline]] inline void compensatedRowBody(const double* aRow, const MatrixView& b,
                                                      double* sums, double* magnitudes,
                                                      double* errors) {
    std::fill(sums, sums + b.cols, 0.0);
    std::fill(magnitudes, magnitudes + b.cols, 0.0);
    std::fill(errors, errors + b.cols, 0.0);
    for (std::int64_t p = 0; p < b.rows; ++p) {
        const double x = aRow[p];
        const double magnitude = std::fabs(x);
        const double* bRow = b.row<double>(p);
        for (std::int64_t j = 0; j < b.cols; ++j) {
            const double product = x * bRow[j];
            const double productError = std::fma(x, bRow[j], -product);
            const double sum = sums[j] + product;
            const double back = sum - product;
            const double sumError = (sums[j] - back) + (product - (sum - back));
            sums[j] = sum;
            errors[j] += sumError + productError;
            magnitudes[j] += magnitude * std::fabs(bRow[j]);
        }
    }
}

GOBLIN_CPU_CLONES void productRow(const float* aRow, const MatrixView& b, double* sums,
                                  double* magnitudes, double* errors) {
    plainRowBody(aRow, b, sums, magnitudes);
    std::fill(errors, errors + b.cols, 0.0);
}

GOBLIN_CPU_CLONES void productRow(const double* aRow, const MatrixView& b, double* sums,
                                  double* magnitudes, double* errors) {
    compensatedRowBody(aRow, b, sums, magnitudes, errors);
}

template <class T>
MatmulCheckReport compareExactlyOf(const MatrixView& a, const MatrixView& b, const MatrixView& c) {
    const std::int64_t k = a.cols;
    const double tileFactor = gamma(k, unitRoundoff(a.dtype));
    // The recomputation's own error, relative to the computed |A||B| (itself within γ_k of it);
    // f64: the compensated pair's 2·γ_{2k+2}², and as much again for the comparison below.
    const double compensated = gamma(2 * k + 2, kF64Roundoff);
    const double recomputeFactor =
        a.dtype == DType::F32 ? gamma(k, kF64Roundoff) : 4.0 * compensated * compensated;
    const double slack = 1.0 + 2.0 * gamma(k + 2, kF64Roundoff);
    const double minNormal = a.dtype == DType::F32
                                 ? static_cast<double>(std::numeric_limits<float>::min())
                                 : std::numeric_limits<double>::min();
    const double underflow = 2.0 * static_cast<double>(k) * minNormal;
    const auto n = static_cast<std::size_t>(b.cols);
    std::vector<double> sums(n), magnitudes(n), errors(n);
    MatmulCheckReport report;
    report.verdict = Verdict::Accepted;
    report.threshold = 1.0;
    bool reject = false;
    for (std::int64_t i = 0; i < a.rows; ++i) {
        productRow(a.row<T>(i), b, sums.data(), magnitudes.data(), errors.data());
        const T* cRow = c.row<T>(i);
        for (std::size_t j = 0; j < n; ++j) {
            // |C − (sums + errors)|, the high parts subtracted by TwoSum (errors is 0 for f32).
            const auto value = static_cast<double>(cRow[j]);
            const double high = value - sums[j];
            const double back = high - value;
            const double low = (value - (high - back)) + (-sums[j] - back);
            const double difference = std::fabs(high + (low - errors[j]));
            const double own = tileFactor * magnitudes[j];
            const double allowed =
                (tileFactor + recomputeFactor) * magnitudes[j] * slack + underflow;
            const double ratio = std::isnan(difference) ? std::numeric_limits<double>::infinity()
                                 : own > 0.0            ? difference / own
                                 : difference == 0.0    ? 0.0
                                                        : std::numeric_limits<double>::infinity();
            reject = reject || !(difference <= allowed);
            report.boundRatio =
                std::max(report.boundRatio, allowed > 0.0 ? difference / allowed : ratio);
            if (report.worstRow < 0 || ratio > report.maxErrorRatio) {
                report.maxErrorRatio = ratio;
                report.residual = difference;
                report.bound = allowed;
                report.worstRow = i;
                report.worstColumn = static_cast<std::int64_t>(j);
            }
        }
    }
    if (reject) {
        report.verdict = Verdict::Rejected;
        report.reason = "exact check failed at (" + std::to_string(report.worstRow) + ", " +
                        std::to_string(report.worstColumn) + "): |error| " +
                        std::to_string(report.residual) + " exceeds its bound " +
                        std::to_string(report.bound) + " (element error ratio " +
                        std::to_string(report.maxErrorRatio) + ")";
    }
    return report;
}

} // namespace

MatmulCheckReport compareExactly(const MatrixView& a, const MatrixView& b, const MatrixView& c) {
    if (a.dtype == DType::F32)
        return compareExactlyOf<float>(a, b, c);
    return compareExactlyOf<double>(a, b, c);
}

} // namespace goblin::verify::detail
