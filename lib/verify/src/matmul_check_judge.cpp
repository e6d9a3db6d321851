// The last step of the Freivalds check: every residual |C·r − A·(B·r)| against its block's sound
// bound (over it: rejected) and calibrated threshold (over it: the grey zone), and the report's
// worst element error ratio. Private to goblin_verify. Pure; safe on any thread.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "matmul_check_detail.hpp"

namespace goblin::verify::detail {
namespace {

using core::DType;
using core::MatrixView;

constexpr double kF64Roundoff = 0x1p-53;
// Relative slack on the bounds: covers the rounding of the bounds' own f64 sums and the final
// subtraction, so an honest result never fails by an ulp of the check arithmetic.
constexpr double kBoundSlack = 1.0 + 1e-12;
// A residual at most this fraction of (the largest ratio so far × its divisor) cannot give a larger
// ratio, whatever the rounding of the product and the division.
constexpr double kRatioFilter = 1.0 - 1e-9;

double errorRatio(double residual, double bound) {
    if (bound > 0.0)
        return residual / bound;
    return residual == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
}

// Per (row, block): the sound bound's and the threshold's parts.
struct BlockLimits {
    double sound = 0.0;     // residual over this: impossible for an honest tile
    double threshold = 0.0; // residual over this: grey zone
    double unit = 0.0;      // the block's mean element bound, for the ratio estimate
};

struct JudgeFactors {
    double tile = 0.0, check = 0.0, result = 0.0, underflow = 0.0, threshold = 0.0;
    double magnitudeSlack = 1.0; // the computed magnitude sums are at most this much too small
};

JudgeFactors judgeFactors(DType dtype, const ColumnProbe& probe) {
    std::int64_t widest = 0;
    for (std::int64_t block = 0; block < probe.blocks(); ++block)
        widest = std::max(widest, probe.blockStarts[static_cast<std::size_t>(block) + 1] -
                                      probe.blockStarts[static_cast<std::size_t>(block)]);
    JudgeFactors factors;
    factors.tile = gamma(probe.k, unitRoundoff(dtype));
    if (dtype == DType::F32) {
        // The check itself sums a block's w terms for B·r and k for A·(B·r), in plain float64:
        // ≈ w·2⁻²⁹ of a block's mean element bound, negligible.
        factors.check = gamma(probe.k + widest + 2, kF64Roundoff);
        factors.result = gamma(widest + 1, kF64Roundoff);
    } else {
        // Plain float64 sums would err by as much as the f64 tile itself; the compensated ones
        // (double-double B·r, A·(B·r), C·r and the residual by TwoSum) err by at most
        // 6·γ_{3(k+w)+12}²·(S + |C|·w): at most ≈ 42·K²·2⁻⁵³ of the block's mean element bound
        // (docs/verification.md, "Single corrupted element", f64 tiles).
        const double compensated = gamma(3 * (probe.k + widest) + 12, kF64Roundoff);
        factors.check = 6.0 * compensated * compensated;
        factors.result = factors.check;
    }
    // Nested sums of non-negative terms come out at least (1 − γ_{k+w})× the exact ones.
    factors.magnitudeSlack = 1.0 + 2.0 * gamma(probe.k + widest + 4, kF64Roundoff);
    const double minNormal = dtype == DType::F32
                                 ? static_cast<double>(std::numeric_limits<float>::min())
                                 : std::numeric_limits<double>::min();
    factors.underflow = static_cast<double>(probe.k) * minNormal;
    factors.threshold = probe.threshold;
    return factors;
}

BlockLimits blockLimits(const JudgeFactors& factors, double magnitude, double resultMagnitude,
                        double weightSum, std::int64_t width) {
    const double slack = kBoundSlack * factors.magnitudeSlack;
    const double checkPart =
        (factors.check * magnitude + factors.result * resultMagnitude) * slack +
        factors.underflow * weightSum;
    BlockLimits limits;
    limits.sound = factors.tile * magnitude * slack + checkPart;
    limits.unit = factors.tile * magnitude / static_cast<double>(width);
    // A one-column block holds one element and no other element's rounding: an honest residual
    // is within the element's own bound, so the threshold can be that bound (docs/verification.md).
    const double threshold = width == 1 ? std::max(factors.threshold, 1.0) : factors.threshold;
    limits.threshold = threshold * limits.unit + checkPart;
    return limits;
}

// |(C·r) − (A·(B·r))| from the two sums; f64 tiles: from their compensated pairs, the high parts
// subtracted by TwoSum, so the result is within an ulp of its own value of the pairs' difference.
double residualAt(const BlockSums& cSums, const BlockSums& aSums, std::size_t at) {
    const double c = cSums.sums[at], a = aSums.sums[at];
    if (cSums.tails.empty())
        return std::fabs(c - a);
    const double difference = c - a;
    const double back = difference - c;
    const double error = (c - (difference - back)) + (-a - back);
    return std::fabs(difference + ((error + cSums.tails[at]) - aSums.tails[at]));
}

} // namespace

MatmulCheckReport judgeResiduals(DType dtype, std::int64_t rows, const ColumnProbe& probe,
                                 const BlockSums& cSums, const BlockSums& aSums) {
    const JudgeFactors factors = judgeFactors(dtype, probe);
    const std::int64_t blocks = probe.blocks();
    const int vectors = probe.vectors;
    std::vector<double> weightSums(static_cast<std::size_t>(blocks), 0.0);
    for (std::int64_t block = 0; block < blocks; ++block)
        for (std::int64_t j = probe.blockStarts[static_cast<std::size_t>(block)];
             j < probe.blockStarts[static_cast<std::size_t>(block) + 1]; ++j)
            weightSums[static_cast<std::size_t>(block)] +=
                probe.weights[static_cast<std::size_t>(j)];
    MatmulCheckReport report;
    report.verdict = Verdict::Accepted;
    report.threshold = probe.threshold;
    bool escalate = false, reject = false;
    for (std::int64_t i = 0; i < rows; ++i) {
        for (std::int64_t block = 0; block < blocks; ++block) {
            const std::size_t at = static_cast<std::size_t>((i * blocks + block) * (vectors + 1));
            const auto index = static_cast<std::size_t>(block);
            const BlockLimits limits =
                blockLimits(factors, aSums.sums[at + static_cast<std::size_t>(vectors)],
                            cSums.sums[at + static_cast<std::size_t>(vectors)], weightSums[index],
                            probe.blockStarts[index + 1] - probe.blockStarts[index]);
            // The block's largest residual over the vectors: every ratio below grows with the
            // residual, so it is judged once per block. A NaN (overflow inside the check) stays,
            // fails the comparisons and rejects.
            double residual = 0.0;
            for (int v = 0; v < vectors && !std::isnan(residual); ++v) {
                const double next = residualAt(cSums, aSums, at + static_cast<std::size_t>(v));
                if (std::isnan(next) || next > residual)
                    residual = next;
            }
            const double infinity = std::numeric_limits<double>::infinity();
            reject = reject || !(residual <= limits.sound);
            escalate = escalate || !(residual <= limits.threshold);
            // The ratios' divisions only where a ratio may beat the largest so far (most blocks'
            // residuals are far below it): the same maxima as dividing for every block.
            if (!(residual <= report.boundRatio * limits.sound * kRatioFilter))
                report.boundRatio =
                    std::max(report.boundRatio,
                             std::isnan(residual) ? infinity : errorRatio(residual, limits.sound));
            if (report.worstRow >= 0 &&
                residual <= report.maxErrorRatio * limits.unit * kRatioFilter)
                continue;
            const double ratio =
                std::isnan(residual) ? infinity : errorRatio(residual, limits.unit);
            if (report.worstRow < 0 || ratio > report.maxErrorRatio) {
                report.maxErrorRatio = ratio;
                report.residual = residual;
                report.bound = limits.sound;
                report.worstRow = i;
            }
        }
    }
    if (!reject && !escalate)
        return report;
    report.verdict = reject ? Verdict::Rejected : Verdict::Escalate;
    report.reason =
        (reject ? std::string("Freivalds check failed at row ")
                : std::string("grey zone (over the calibrated threshold, within the sound bound) "
                              "at row ")) +
        std::to_string(report.worstRow) + ": residual " + std::to_string(report.residual) +
        ", sound bound " + std::to_string(report.bound) + ", estimated element error ratio " +
        std::to_string(report.maxErrorRatio) + " (threshold " + std::to_string(probe.threshold) +
        ")";
    return report;
}

} // namespace goblin::verify::detail
