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
constexpr int kRows = 4;
constexpr std::int64_t kLanes = 4;
// Below this many column blocks one dot product per row and block (blockSums) is as fast.
constexpr std::int64_t kPanelBlocks = 4;

// out[r][column + j] = Σ_p x[r][p]·probes[p][column + j] for j < 4·Panels, r < kRows (x: kRows
// rows of k, probes: k rows of `width`).
template <int Panels>
[[gnu::always_inline]] inline void panelProducts(const double* x, std::int64_t k,
                                                 const double* probes, std::int64_t width,
                                                 std::int64_t column, double* out) {
    Lanes sums[kRows][Panels] = {};
    for (std::int64_t p = 0; p < k; ++p) {
        Lanes y[Panels];
        for (int v = 0; v < Panels; ++v)
            std::memcpy(&y[v], probes + p * width + column + v * kLanes, sizeof(Lanes));
        for (int r = 0; r < kRows; ++r) {
            const double value = x[r * k + p];
            const Lanes spread = {value, value, value, value};
            for (int v = 0; v < Panels; ++v)
                sums[r][v] += spread * y[v];
        }
    }
    for (int r = 0; r < kRows; ++r)
        for (int v = 0; v < Panels; ++v)
            std::memcpy(out + r * width + column + v * kLanes, &sums[r][v], sizeof(Lanes));
}

// Every column of `probes` (width a multiple of kLanes), three panels at a time.
GOBLIN_CPU_CLONES_WITH_AVX512 void rowProducts(const double* x, std::int64_t k,
                                               const double* probes, std::int64_t width,
                                               double* out) {
    std::int64_t column = 0;
    for (; column + 3 * kLanes <= width; column += 3 * kLanes)
        panelProducts<3>(x, k, probes, width, column, out);
    if (column + 2 * kLanes <= width)
        panelProducts<2>(x, k, probes, width, column, out);
    else if (column + kLanes <= width)
        panelProducts<1>(x, k, probes, width, column, out);
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
    for (std::int64_t i = 0; i < a.rows; i += kRows) {
        // A short last group repeats its last row and drops the copies.
        for (int r = 0; r < kRows; ++r) {
            const float* row = a.row<float>(std::min(i + r, a.rows - 1));
            for (std::int64_t p = 0; p < k; ++p) {
                const auto at = static_cast<std::size_t>(r * k + p);
                values[at] = static_cast<double>(row[p]);
                magnitudes[at] = std::fabs(values[at]);
            }
        }
        rowProducts(values.data(), k, probe.signedPanels.data(), signedWidth, signedSums.data());
        rowProducts(magnitudes.data(), k, probe.magnitudePanels.data(), magnitudeWidth,
                    magnitudeSums.data());
        for (int r = 0; r < kRows && i + r < a.rows; ++r)
            for (std::int64_t block = 0; block < blocks; ++block) {
                double* to = result.sums.data() + ((i + r) * blocks + block) * stride;
                for (int v = 0; v < probe.vectors; ++v)
                    to[v] = signedSums[static_cast<std::size_t>(r * signedWidth +
                                                                block * probe.vectors + v)];
                to[probe.vectors] =
                    magnitudeSums[static_cast<std::size_t>(r * magnitudeWidth + block)];
            }
    }
    return result;
}

} // namespace goblin::verify::detail
