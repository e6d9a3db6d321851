#include "goblin/verify/matmul_check.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "goblin/core/finite_values.hpp"
#include "matmul_check_detail.hpp"

namespace goblin::verify {
namespace {

using core::DType;
using core::MatrixView;
using detail::kMaxVectors;

constexpr double kF64Roundoff = 0x1p-53;
// Column weights stay finite and non-zero whatever the column holds.
constexpr double kSmallestMean = 0x1p-900;

template <class T>
std::optional<std::pair<std::int64_t, std::int64_t>> findNonFiniteIn(const MatrixView& view) {
    for (std::int64_t i = 0; i < view.rows; ++i) {
        const T* row = view.row<T>(i);
        if (core::allFinite(std::span(row, static_cast<std::size_t>(view.cols))))
            continue;
        const auto* end = row + view.cols;
        const auto* found = std::find_if(row, end, [](T value) { return !std::isfinite(value); });
        return std::pair{i, static_cast<std::int64_t>(found - row)};
    }
    return std::nullopt;
}

std::string shapeText(const MatrixView& view) {
    return std::to_string(view.rows) + "x" + std::to_string(view.cols);
}

MatmulCheckReport rejected(std::string reason) {
    MatmulCheckReport report;
    report.verdict = Verdict::Rejected;
    report.maxErrorRatio = std::numeric_limits<double>::infinity();
    report.reason = std::move(reason);
    return report;
}

std::optional<std::string> dtypeProblem(const MatrixView& a, const MatrixView& b,
                                        const MatrixView& c) {
    if (!core::isFloatingPoint(a.dtype))
        return "dtype " + std::string(core::wireName(a.dtype)) + " is not f32 or f64";
    if (b.dtype != a.dtype || c.dtype != a.dtype)
        return "dtypes differ: a " + std::string(core::wireName(a.dtype)) + ", b " +
               std::string(core::wireName(b.dtype)) + ", c " + std::string(core::wireName(c.dtype));
    return std::nullopt;
}

bool shapesFit(const MatrixView& a, const MatrixView& b, const MatrixView& c) {
    const bool nonNegative =
        a.rows >= 0 && a.cols >= 0 && b.rows >= 0 && b.cols >= 0 && c.rows >= 0 && c.cols >= 0;
    return nonNegative && b.rows == a.cols && c.rows == a.rows && c.cols == b.cols;
}

std::optional<std::string> nonFiniteProblem(const MatrixView& a, const MatrixView& b,
                                            const MatrixView& c) {
    const std::pair<const char*, const MatrixView*> operands[] = {{"c", &c}, {"a", &a}, {"b", &b}};
    for (const auto& [name, view] : operands) {
        if (auto at = findNonFinite(*view))
            return std::string(name) + " holds a non-finite value at (" +
                   std::to_string(at->first) + ", " + std::to_string(at->second) + ")";
    }
    return std::nullopt;
}

std::optional<std::string> gateProblem(const MatrixView& a, const MatrixView& b,
                                       const MatrixView& c) {
    if (auto problem = dtypeProblem(a, b, c))
        return problem;
    if (!shapesFit(a, b, c))
        return "shapes do not fit: a " + shapeText(a) + ", b " + shapeText(b) + ", c " +
               shapeText(c) + " (need m x k, k x n, m x n)";
    return std::nullopt;
}

// Σ_p |B_pj| per column j.
template <class T> std::vector<double> columnMagnitudesOf(const MatrixView& b) {
    std::vector<double> sums(static_cast<std::size_t>(b.cols), 0.0);
    for (std::int64_t p = 0; p < b.rows; ++p) {
        const T* row = b.row<T>(p);
        for (std::int64_t j = 0; j < b.cols; ++j)
            sums[static_cast<std::size_t>(j)] += std::fabs(static_cast<double>(row[j]));
    }
    return sums;
}

// w_j = 1 ÷ mean_p |B_pj| (from `sums`, Σ_p |B_pj| over B's k rows): with these weights every
// column of |A||B| weighs alike in a block's sum, however the columns of B are scaled. A column of
// zeros (or a non-finite one, which the gate refuses anyway) gets the largest weight of the others.
std::vector<double> columnWeights(std::vector<double> sums, std::int64_t k) {
    double largest = 0.0;
    for (double& sum : sums) {
        const double mean = sum / static_cast<double>(std::max<std::int64_t>(k, 1));
        sum = std::isfinite(mean) && mean > 0.0 ? 1.0 / std::max(mean, kSmallestMean) : 0.0;
        largest = std::max(largest, sum);
    }
    for (double& weight : sums)
        weight = weight > 0.0 ? weight : (largest > 0.0 ? largest : 1.0);
    return sums;
}

std::vector<std::int64_t> blockStartsFor(std::int64_t n, std::int64_t width) {
    const std::int64_t blocks = std::max<std::int64_t>(1, (n + width - 1) / width);
    std::vector<std::int64_t> starts;
    for (std::int64_t block = 0; block <= blocks; ++block)
        starts.push_back(block * n / blocks);
    return starts;
}

// r_v,j = ±U[3/4, 1)·w_j from 64 random bits each: 51 bits of magnitude (exact, strictly under
// w_j) and a sign bit. Never near zero, so a wrong C element always moves C·r by at least 3/4 of
// its weighted error; the spread keeps two wrong elements from cancelling (docs/verification.md).
std::vector<double> randomValues(const std::vector<double>& weights, int vectors,
                                 core::RandomSource& random) {
    std::vector<std::uint64_t> bits(weights.size() * static_cast<std::size_t>(vectors));
    random.fill(std::as_writable_bytes(std::span(bits)));
    std::vector<double> values(bits.size());
    for (std::size_t at = 0; at < bits.size(); ++at) {
        const double magnitude = (0.75 + static_cast<double>(bits[at] >> 13) * kF64Roundoff) *
                                 weights[at % weights.size()];
        values[at] = (bits[at] & 1u) != 0 ? -magnitude : magnitude;
    }
    return values;
}

// The probes of the column side (rows of B or C): block b, vector v reads values_v and weights
// from the block's first column.
std::vector<detail::BlockProbes> columnSideProbes(const ColumnProbe& probe) {
    std::vector<detail::BlockProbes> blocks(static_cast<std::size_t>(probe.blocks()));
    for (std::int64_t block = 0; block < probe.blocks(); ++block) {
        auto& entry = blocks[static_cast<std::size_t>(block)];
        entry.offset = probe.blockStarts[static_cast<std::size_t>(block)];
        entry.length = probe.blockStarts[static_cast<std::size_t>(block) + 1] - entry.offset;
        for (int v = 0; v < probe.vectors; ++v)
            entry.signedProbes[v] = probe.values.data() + v * probe.n + entry.offset;
        entry.magnitudeProbe = probe.weights.data() + entry.offset;
    }
    return blocks;
}

// The probes of the row side (rows of A): block b multiplies the whole row with B·r_v of the block
// (f64: its high and low parts) and its magnitude with |B|·w of the block.
std::vector<detail::BlockProbes> rowSideProbes(const ColumnProbe& probe) {
    std::vector<detail::BlockProbes> blocks(static_cast<std::size_t>(probe.blocks()));
    for (std::int64_t block = 0; block < probe.blocks(); ++block) {
        auto& entry = blocks[static_cast<std::size_t>(block)];
        entry.length = probe.k;
        for (int v = 0; v < probe.vectors; ++v) {
            entry.signedProbes[v] = probe.rowProbe(block, v);
            entry.signedTails[v] = probe.rowProbeTail(block, v);
        }
        entry.magnitudeProbe = probe.rowProbe(block, probe.vectors);
    }
    return blocks;
}

// A's sums against the row side of `probe`: as small matrix products for an f32 A where the probe
// was laid out for them, else one dot product per row and block.
detail::BlockSums rowSideSums(const MatrixView& a, const ColumnProbe& probe) {
    if (a.dtype == DType::F32 && !probe.signedPanels.empty())
        return detail::rowSideSumsByPanels(a, probe);
    return detail::blockSums(a, rowSideProbes(probe), probe.vectors);
}

// A NaN or Inf anywhere in a, b or c makes a magnitude sum non-finite: the weights are never zero,
// and Inf·0 is NaN. So finite sums prove finite inputs without a separate pass over them.
bool magnitudeSumsFinite(const std::vector<double>& sums, int vectors) {
    const auto stride = static_cast<std::size_t>(vectors + 1);
    for (std::size_t at = static_cast<std::size_t>(vectors); at < sums.size(); at += stride)
        if (!std::isfinite(sums[at]))
            return false;
    return true;
}

} // namespace

double unitRoundoff(core::DType dtype) {
    assert(core::isFloatingPoint(dtype) && "unitRoundoff() needs a floating-point dtype");
    return dtype == DType::F32 ? 0x1p-24 : kF64Roundoff;
}

double gamma(std::int64_t n, double unitRoundoff) {
    assert(n >= 0 && "gamma() needs n >= 0");
    const double nu = static_cast<double>(n) * unitRoundoff;
    if (nu >= 1.0)
        return std::numeric_limits<double>::infinity();
    return nu / (1.0 - nu);
}

std::int64_t defaultBlockWidth(std::int64_t k) {
    return std::clamp<std::int64_t>(k / 4, 1, 1024);
}

std::optional<std::pair<std::int64_t, std::int64_t>> findNonFinite(const core::MatrixView& view) {
    if (view.dtype == DType::F32)
        return findNonFiniteIn<float>(view);
    if (view.dtype == DType::F64)
        return findNonFiniteIn<double>(view);
    return std::nullopt;
}

ColumnProbe probeColumns(const core::MatrixView& b, const MatmulCheckOptions& options,
                         core::RandomSource& random) {
    assert(core::isFloatingPoint(b.dtype) && "probeColumns() needs an f32 or f64 view");
    std::vector<double> magnitudes =
        b.dtype == DType::F32 ? columnMagnitudesOf<float>(b) : columnMagnitudesOf<double>(b);
    return detail::probeColumnsOf(
        b.dtype, b.rows, std::move(magnitudes),
        [&](const std::vector<detail::BlockProbes>& blocks, int vectors) {
            return detail::blockSums(b, blocks, vectors);
        },
        options, random);
}

namespace detail {

ColumnProbe probeColumnsOf(DType dtype, std::int64_t k, std::vector<double> columnMagnitudes,
                           const RowSumsOfB& rowSumsOfB, const MatmulCheckOptions& options,
                           core::RandomSource& random) {
    ColumnProbe probe;
    probe.dtype = dtype;
    probe.k = k;
    probe.n = static_cast<std::int64_t>(columnMagnitudes.size());
    probe.vectors = std::clamp(options.vectors, 1, kMaxVectors);
    probe.threshold = options.threshold;
    const std::int64_t width = options.blockWidth > 0 ? options.blockWidth : defaultBlockWidth(k);
    probe.blockStarts = blockStartsFor(probe.n, width);
    probe.weights = columnWeights(std::move(columnMagnitudes), k);
    probe.values = randomValues(probe.weights, probe.vectors, random);
    const BlockSums sums = rowSumsOfB(columnSideProbes(probe), probe.vectors);
    // Transposed so the row side reads each block's probe columns contiguously.
    const std::int64_t blocks = probe.blocks();
    const std::int64_t stride = probe.vectors + 1;
    const auto transpose = [&](const std::vector<double>& from, std::vector<double>& to) {
        to.assign(static_cast<std::size_t>(blocks * stride * probe.k), 0.0);
        for (std::int64_t p = 0; p < probe.k; ++p)
            for (std::int64_t column = 0; column < blocks * stride; ++column)
                to[static_cast<std::size_t>(column * probe.k + p)] =
                    from[static_cast<std::size_t>(p * blocks * stride + column)];
    };
    transpose(sums.sums, probe.rowProbes);
    if (!sums.tails.empty())
        transpose(sums.tails, probe.rowProbeTails);
    layOutPanels(probe);
    return probe;
}

MatmulCheckReport checkWithoutB(const MatrixView& a, const MatrixView& c,
                                const ColumnProbe& probe) {
    return checkWithRowSums(a.dtype, c, probe, rowSideSums(a, probe));
}

} // namespace detail

MatmulCheckReport checkMatmulTile(const core::MatrixView& a, const core::MatrixView& b,
                                  const core::MatrixView& c, const MatmulCheckOptions& options,
                                  core::RandomSource& random) {
    if (auto problem = gateProblem(a, b, c))
        return rejected(*problem);
    return checkMatmulTileWithProbe(a, b, c, probeColumns(b, options, random));
}

MatmulCheckReport checkMatmulTileWithProbe(const core::MatrixView& a, const core::MatrixView& b,
                                           const core::MatrixView& c, const ColumnProbe& probe) {
    if (auto problem = gateProblem(a, b, c))
        return rejected(*problem);
    assert(probe.dtype == b.dtype && probe.k == b.rows && probe.n == b.cols &&
           "the probe was made for another block of B");
    assert(a.rowStride >= a.cols && b.rowStride >= b.cols && c.rowStride >= c.cols &&
           "a view's rowStride is shorter than its row");
    if (a.rows == 0 || b.cols == 0) {
        // Nothing to multiply, but a non-finite input is still refused.
        if (auto problem = nonFiniteProblem(a, b, c))
            return rejected(*problem);
        MatmulCheckReport empty;
        empty.verdict = Verdict::Accepted;
        empty.threshold = probe.threshold;
        return empty;
    }
    const detail::BlockSums cSums = detail::blockSums(c, columnSideProbes(probe), probe.vectors);
    const detail::BlockSums aSums = rowSideSums(a, probe);
    // The NaN/Inf gate (c first, then a, b) scans the data only when the sums say it must.
    if (!magnitudeSumsFinite(cSums.sums, probe.vectors) ||
        !magnitudeSumsFinite(aSums.sums, probe.vectors)) {
        if (auto problem = nonFiniteProblem(a, b, c))
            return rejected(*problem);
    }
    return detail::judgeResiduals(a.dtype, a.rows, probe, cSums, aSums);
}

namespace detail {

MatmulCheckReport checkWithRowSums(DType dtype, const MatrixView& c, const ColumnProbe& probe,
                                   const BlockSums& aSums) {
    assert(c.dtype == dtype && probe.dtype == dtype && c.cols == probe.n &&
           aSums.sums.size() ==
               static_cast<std::size_t>(c.rows * probe.blocks() * (probe.vectors + 1)) &&
           "the row sums were made for another tile");
    const BlockSums cSums = blockSums(c, columnSideProbes(probe), probe.vectors);
    return judgeResiduals(dtype, c.rows, probe, cSums, aSums);
}

} // namespace detail

MatmulCheckReport checkMatmulTileExactly(const core::MatrixView& a, const core::MatrixView& b,
                                         const core::MatrixView& c) {
    if (auto problem = gateProblem(a, b, c))
        return rejected(*problem);
    if (auto problem = nonFiniteProblem(a, b, c))
        return rejected(*problem);
    return detail::compareExactly(a, b, c);
}

} // namespace goblin::verify
