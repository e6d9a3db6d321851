// Private parts of the matmul check: the float64 sums of the Freivalds check (per row of a matrix
// and per column block, the row restricted to the block times random vectors, its magnitude times a
// weight vector; compensated, double-double, for f64 matrices), the judging of their residuals and
// the exact comparison. Private to goblin_verify. Pure; safe on any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "goblin/core/tensor.hpp"
#include "goblin/verify/matmul_check.hpp"

namespace goblin::verify::detail {

constexpr int kMaxVectors = 16;

// What one block multiplies: columns [offset, offset + length) of each row, against `vectors`
// signed probes and one magnitude probe (each indexed from the block's first column). A signed
// probe may have a low part (the probe is signedProbes + signedTails, double-double); only f64
// matrices read it, and then every signed probe of the block has one.
struct BlockProbes {
    std::int64_t offset = 0, length = 0;
    const double* signedProbes[kMaxVectors] = {};
    const double* signedTails[kMaxVectors] = {};
    const double* magnitudeProbe = nullptr;
};

// sums[(row·blocks + block)·(vectors + 1) + v] = Σ_j x_row,j·signed_v,j for v < vectors, and
// Σ_j |x_row,j|·magnitude_j at v = vectors, for every row of `matrix` (f32 or f64, any stride).
// f32 rows: plain f64 sums, `tails` empty. f64 rows: the signed sums are compensated, the pair
// sums + tails (same layout, magnitude entries 0) is within 4·γ_{3L+8}²·Σ_j|x_j·signed_j| +
// γ_{3L+8}·Σ_j|x_j·tail_j| of the exact sum (γ of 2⁻⁵³, L the block's length); the magnitude sums
// stay plain (relative error γ_L).
struct BlockSums {
    std::vector<double> sums, tails;
};
BlockSums blockSums(const core::MatrixView& matrix, const std::vector<BlockProbes>& blocks,
                    int vectors);

// Lays the probe's row side out for rowSideSumsByPanels (ColumnProbe::signedPanels and
// magnitudePanels) when the panel products beat blockSums: an f32 probe of several column blocks.
void layOutPanels(ColumnProbe& probe);

// blockSums(A, the row side of `probe`, probe.vectors) for an f32 A (a.cols == probe.k) and a
// probe layOutPanels laid out, computed as small matrix products.
BlockSums rowSideSumsByPanels(const core::MatrixView& a, const ColumnProbe& probe);

// Compares every residual |C·r − A·(B·r)| (from `cSums` of C's rows and `aSums` of A's `rows`
// rows of `dtype` against `probe`) with its block's threshold and sound bound, after the gates
// have passed: accepted, escalated (the grey zone) or rejected, with the worst element's error
// ratio.
MatmulCheckReport judgeResiduals(core::DType dtype, std::int64_t rows, const ColumnProbe& probe,
                                 const BlockSums& cSums, const BlockSums& aSums);

// The check of `c` against A·B when the caller computed A's sums itself (`aSums` as
// blockSums(A, the row side of `probe`, …) gives them: A is never materialised) for an A of
// `dtype`, c.rows × probe.k, that the caller knows to be finite, like B and c.
MatmulCheckReport checkWithRowSums(core::DType dtype, const core::MatrixView& c,
                                   const ColumnProbe& probe, const BlockSums& aSums);

// The exact check after the gates passed: C against A·B recomputed in float64, per element.
MatmulCheckReport compareExactly(const core::MatrixView& a, const core::MatrixView& b,
                                 const core::MatrixView& c);

// probeColumns for a k × n B that the caller never materialises (a convolution's im2col): from
// `columnMagnitudes`, Σ_p |B_pj| for each of its n columns, and `rowSumsOfB`, which gives what
// blockSums(B, blocks, vectors) would.
using RowSumsOfB = std::function<BlockSums(const std::vector<BlockProbes>& blocks, int vectors)>;
ColumnProbe probeColumnsOf(core::DType dtype, std::int64_t k, std::vector<double> columnMagnitudes,
                           const RowSumsOfB& rowSumsOfB, const MatmulCheckOptions& options,
                           core::RandomSource& random);

// The check of `c` against `a`·B for a probe of B made by probeColumnsOf (a, B and c finite).
MatmulCheckReport checkWithoutB(const core::MatrixView& a, const core::MatrixView& c,
                                const ColumnProbe& probe);

} // namespace goblin::verify::detail
