// Verification of a matmul tile: shape/dtype and NaN/Inf gates, then Freivalds' check in float64
// (compensated for f64 tiles) per column block with a per-element guarantee and a grey zone, and
// the exact check that decides a grey-zone tile (docs/verification.md, "Matmul tiles";
// docs/protocol.md, "Verification").
// Pure functions; safe on any thread (the caller owns the memory the views point to).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "goblin/core/random_source.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::verify {

// Unit roundoff of a floating-point dtype: 2^-24 for f32, 2^-53 for f64.
double unitRoundoff(core::DType dtype);
// γ_n(u) = n·u / (1 − n·u); +infinity when n·u ≥ 1.
double gamma(std::int64_t n, double unitRoundoff);

// The first non-finite element of a floating-point view, as (row, col), if any.
std::optional<std::pair<std::int64_t, std::int64_t>> findNonFinite(const core::MatrixView& view);

struct MatmulCheckOptions {
    int vectors = 2; // independent random vectors per column block, 1 to 16
    // Widest column block; 0 picks it from the inner size (defaultBlockWidth(k)).
    std::int64_t blockWidth = 0;
    // Accept while every residual stays within this many times its block's mean element bound.
    double threshold = 0.8;
};

// The block width the check uses by default for inner size k (docs/verification.md).
std::int64_t defaultBlockWidth(std::int64_t k);

// Escalate: the tile is in the grey zone (over the calibrated threshold, within the sound bound);
// checkMatmulTileExactly decides it.
enum class Verdict { Accepted, Escalate, Rejected };

struct MatmulCheckReport {
    Verdict verdict = Verdict::Rejected;
    // The worst element error ÷ its own bound γ_K·(|A||B|)_ij: estimated by Freivalds (largest
    // residual ÷ its block's mean element bound), exact from checkMatmulTileExactly.
    // +infinity when a gate (dtype, shape, NaN/Inf) rejected the tile.
    double maxErrorRatio = 0.0;
    double threshold = 0.0;  // the ratio above which this check does not accept
    double residual = 0.0;   // the residual (Freivalds) or |ΔC_ij| (exact) at the worst ratio
    double bound = 0.0;      // its sound bound (rejected when residual > bound)
    double boundRatio = 0.0; // max over residuals of residual ÷ sound bound (> 1: rejected)
    std::int64_t worstRow = -1, worstColumn = -1; // exact: the worst element; Freivalds: row, -1
    std::string reason; // why a tile was rejected or escalated; empty when accepted
};

// Checks that c ≈ a·b for a (m×k), b (k×n), c (m×n) views of one dtype (f32 or f64), with random
// vectors from `random` (the node's CSPRNG; tests pass a SeededRandom).
MatmulCheckReport checkMatmulTile(const core::MatrixView& a, const core::MatrixView& b,
                                  const core::MatrixView& c, const MatmulCheckOptions& options,
                                  core::RandomSource& random);

// Decides a tile exactly: A·B and |A||B| recomputed in float64, every element checked against its
// own bound γ_K·(|A||B|)_ij (plus the float64 recomputation's own error). Accepted or Rejected,
// never Escalate; an honest tile is never rejected. O(m·k·n): for grey-zone tiles only.
MatmulCheckReport checkMatmulTileExactly(const core::MatrixView& a, const core::MatrixView& b,
                                         const core::MatrixView& c);

// The random vectors of a check and, per column block, B·r and |B|·w for a block of B's columns
// (w the column weights, 1 ÷ the mean |B| of each column). Tiles that share the columns share it,
// so B is read once per column block instead of once per tile. Immutable once made; share it
// across threads as shared_ptr<const ColumnProbe>.
struct ColumnProbe {
    core::DType dtype = core::DType::F32;
    std::int64_t k = 0, n = 0;
    int vectors = 0;
    double threshold = 0.0;
    std::vector<std::int64_t> blockStarts; // column of each block's start, then n
    std::vector<double> weights;           // w_j, n entries
    std::vector<double> values;            // r_v = ±U[3/4, 1)·w_j, n entries per vector
    // Per block: vectors columns (B·r_v restricted to the block) then |B|·w of the block, k each.
    std::vector<double> rowProbes;
    // f64 probes only (empty for f32): the low parts of the B·r_v columns, same layout (the
    // magnitude columns hold 0). B·r_v = rowProbe + rowProbeTail, a compensated (double-double)
    // sum, so the check's own rounding stays far below an f64 tile's element bounds.
    std::vector<double> rowProbeTails;
    // f32 probes of several blocks only (else empty): the same columns laid out by row for the
    // row side's panel products, made once with the probe — every signed column (block, v) side
    // by side in `signedPanels` (k rows of signedPanelWidth), every magnitude column in
    // `magnitudePanels` (k rows of magnitudePanelWidth), each padded with zero columns to whole
    // panels.
    std::vector<double> signedPanels, magnitudePanels;
    std::int64_t signedPanelWidth = 0, magnitudePanelWidth = 0;

    std::int64_t blocks() const { return static_cast<std::int64_t>(blockStarts.size()) - 1; }
    const double* rowProbe(std::int64_t block, int column) const {
        return rowProbes.data() + (block * (vectors + 1) + column) * k;
    }
    // nullptr for f32 probes.
    const double* rowProbeTail(std::int64_t block, int column) const {
        if (rowProbeTails.empty())
            return nullptr;
        return rowProbeTails.data() + (block * (vectors + 1) + column) * k;
    }
};

// Needs b of dtype f32 or f64 (asserted).
ColumnProbe probeColumns(const core::MatrixView& b, const MatmulCheckOptions& options,
                         core::RandomSource& random);

// The same check with a probe made by probeColumns(b, …) for this b.
MatmulCheckReport checkMatmulTileWithProbe(const core::MatrixView& a, const core::MatrixView& b,
                                           const core::MatrixView& c, const ColumnProbe& probe);

} // namespace goblin::verify
