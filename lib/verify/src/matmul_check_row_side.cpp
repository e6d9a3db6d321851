// A's side of the Freivalds check for f32 tiles of many column blocks, as small matrix products:
// the sums of every block are A's rows times the probe's columns, so four rows at a time, widened
// to f64 once, multiply k × 4 panels of those columns with every accumulator in a register, instead
// of one dot product per block that widens the rows again and folds its lanes. Plain f64 sums in
// another order than blockSums', which the bounds allow (matmul_check_detail.hpp). Private to
// goblin_verify. Pure; safe on any thread.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <vector>

#include "goblin/core/cpu_clones.hpp"
#include "matmul_check_detail.hpp"

namespace goblin::verify::detail {
namespace {

using Lanes = double __attribute__((vector_size(32)));
using WideLanes = double __attribute__((vector_size(64))); // AVX-512 only (rowProductsWide)
constexpr int kRows = 4;
constexpr std::int64_t kLanes = 4;
// Below this many column blocks one dot product per row and block (blockSums) is as fast.
constexpr std::int64_t kPanelBlocks = 4;

// out[r][column + j] = Σ_p x[r][p]·probes[p][column + j] for j < Panels vectors of V, r < kRows
// (x: kRows rows of k, probes: k rows of `width`).
template <int Panels, class V>
[[gnu::always_inline]] inline void panelProducts(const double* x, std::int64_t k,
                                                 const double* probes, std::int64_t width,
                                                 std::int64_t column, double* out) {
    constexpr std::int64_t kStep = sizeof(V) / sizeof(double);
    V sums[kRows][Panels] = {};
    for (std::int64_t p = 0; p < k; ++p) {
        V y[Panels];
        for (int v = 0; v < Panels; ++v)
            std::memcpy(&y[v], probes + p * width + column + v * kStep, sizeof(V));
        for (int r = 0; r < kRows; ++r) {
            const double value = x[r * k + p];
            // value − 0 is value for every value (−0 too), so this is one broadcast; an
            // initializer list of eight copies compiles to eight masked inserts here.
            const V spread = value - V{};
            for (int v = 0; v < Panels; ++v)
                sums[r][v] += spread * y[v];
        }
    }
    for (int r = 0; r < kRows; ++r)
        for (int v = 0; v < Panels; ++v)
            std::memcpy(out + r * width + column + v * kStep, &sums[r][v], sizeof(V));
}

// Every column of `probes` (width a multiple of kLanes), three panels at a time.
GOBLIN_CPU_CLONES void rowProductsNarrow(const double* x, std::int64_t k, const double* probes,
                                         std::int64_t width, double* out) {
    std::int64_t column = 0;
    for (; column + 3 * kLanes <= width; column += 3 * kLanes)
        panelProducts<3, Lanes>(x, k, probes, width, column, out);
    if (column + 2 * kLanes <= width)
        panelProducts<2, Lanes>(x, k, probes, width, column, out);
    else if (column + kLanes <= width)
        panelProducts<1, Lanes>(x, k, probes, width, column, out);
}

// The same with AVX-512's eight lanes (twice the sums per instruction), the last four columns
// of a width that is not a multiple of eight with four.
GOBLIN_AVX512_ONLY void rowProductsWide(const double* x, std::int64_t k, const double* probes,
                                        std::int64_t width, double* out) {
    constexpr std::int64_t kWide = 2 * kLanes;
    std::int64_t column = 0;
    for (; column + 3 * kWide <= width; column += 3 * kWide)
        panelProducts<3, WideLanes>(x, k, probes, width, column, out);
    if (column + 2 * kWide <= width) {
        panelProducts<2, WideLanes>(x, k, probes, width, column, out);
        column += 2 * kWide;
    } else if (column + kWide <= width) {
        panelProducts<1, WideLanes>(x, k, probes, width, column, out);
        column += kWide;
    }
    if (column + kLanes <= width)
        panelProducts<1, Lanes>(x, k, probes, width, column, out);
}

void rowProducts(const double* x, std::int64_t k, const double* probes, std::int64_t width,
                 double* out) {
    if (core::avx512Present())
        rowProductsWide(x, k, probes, width, out);
    else
        rowProductsNarrow(x, k, probes, width, out);
}

// Four rows of A widened to f64 (values[r·k + p]) and their magnitudes, in one vectorised pass.
GOBLIN_CPU_CLONES_WITH_AVX512 void widenRows(const float* const rows[kRows], std::int64_t k,
                                             double* values, double* magnitudes) {
    for (int r = 0; r < kRows; ++r)
        for (std::int64_t p = 0; p < k; ++p) {
            const double value = rows[r][p];
            values[r * k + p] = value;
            magnitudes[r * k + p] = std::fabs(value);
        }
}

std::int64_t roundUp(std::int64_t count) {
    return (count + kLanes - 1) / kLanes * kLanes;
}

} // namespace

void layOutPanels(ColumnProbe& probe) {
    const std::int64_t k = probe.k, blocks = probe.blocks();
    if (probe.dtype != core::DType::F32 || blocks < kPanelBlocks)
        return;
    probe.signedPanelWidth = roundUp(blocks * probe.vectors);
    probe.magnitudePanelWidth = roundUp(blocks);
    probe.signedPanels.assign(static_cast<std::size_t>(k * probe.signedPanelWidth), 0.0);
    probe.magnitudePanels.assign(static_cast<std::size_t>(k * probe.magnitudePanelWidth), 0.0);
    for (std::int64_t block = 0; block < blocks; ++block) {
        for (int v = 0; v < probe.vectors; ++v) {
            const double* column = probe.rowProbe(block, v);
            for (std::int64_t p = 0; p < k; ++p)
                probe.signedPanels[static_cast<std::size_t>(p * probe.signedPanelWidth +
                                                            block * probe.vectors + v)] = column[p];
        }
        const double* column = probe.rowProbe(block, probe.vectors);
        for (std::int64_t p = 0; p < k; ++p)
            probe.magnitudePanels[static_cast<std::size_t>(p * probe.magnitudePanelWidth + block)] =
                column[p];
    }
}

BlockSums rowSideSumsByPanels(const core::MatrixView& a, const ColumnProbe& probe) {
    const std::int64_t k = probe.k, blocks = probe.blocks(), stride = probe.vectors + 1;
    const std::int64_t signedWidth = probe.signedPanelWidth,
                       magnitudeWidth = probe.magnitudePanelWidth;
    assert(!probe.signedPanels.empty() && "the probe was not laid out for panel products");
    BlockSums result;
    result.sums.assign(static_cast<std::size_t>(a.rows * blocks * stride), 0.0);
    std::vector<double> values(static_cast<std::size_t>(kRows * k)), magnitudes(values.size());
    std::vector<double> signedSums(static_cast<std::size_t>(kRows * signedWidth));
    std::vector<double> magnitudeSums(static_cast<std::size_t>(kRows * magnitudeWidth));
    // Raw pointers in the loops: the checked std::vector::operator[] of hardened builds
    // (_GLIBCXX_ASSERTIONS) would keep them scalar.
    const int vectors = probe.vectors;
    double* const sums = result.sums.data();
    for (std::int64_t i = 0; i < a.rows; i += kRows) {
        // A short last group repeats its last row and drops the copies.
        const float* rows[kRows];
        for (int r = 0; r < kRows; ++r)
            rows[r] = a.row<float>(std::min(i + r, a.rows - 1));
        widenRows(rows, k, values.data(), magnitudes.data());
        rowProducts(values.data(), k, probe.signedPanels.data(), signedWidth, signedSums.data());
        rowProducts(magnitudes.data(), k, probe.magnitudePanels.data(), magnitudeWidth,
                    magnitudeSums.data());
        for (int r = 0; r < kRows && i + r < a.rows; ++r) {
            const double* signedRow = signedSums.data() + r * signedWidth;
            const double* magnitudeRow = magnitudeSums.data() + r * magnitudeWidth;
            double* to = sums + (i + r) * blocks * stride;
            for (std::int64_t block = 0; block < blocks; ++block, to += stride) {
                for (int v = 0; v < vectors; ++v)
                    to[v] = signedRow[block * vectors + v];
                to[vectors] = magnitudeRow[block];
            }
        }
    }
    return result;
}

} // namespace goblin::verify::detail
