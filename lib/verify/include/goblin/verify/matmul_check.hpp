// Verification of a matmul tile: shape/dtype and NaN/Inf gates, then Freivalds' check in float64
// against a sound rounding bound scaled by |A||B| (docs/protocol.md, "Verification").
// Pure functions; safe on any thread (the caller owns the memory the views point to).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "goblin/core/tensor.hpp"

namespace goblin::verify {

// Unit roundoff of a floating-point dtype: 2^-24 for f32, 2^-53 for f64.
double unitRoundoff(core::DType dtype);
// γ_n(u) = n·u / (1 − n·u); +infinity when n·u ≥ 1.
double gamma(std::int64_t n, double unitRoundoff);

// The first non-finite element of a floating-point view, as (row, col), if any.
std::optional<std::pair<std::int64_t, std::int64_t>> findNonFinite(const core::MatrixView& view);

struct MatmulCheckOptions {
    int vectors = 2;        // independent random vectors, at least 2
    std::uint64_t seed = 0; // randomness is injected so tests are repeatable
};

enum class Verdict { Accepted, Rejected };

struct MatmulCheckReport {
    Verdict verdict = Verdict::Rejected;
    double maxErrorRatio = 0.0; // max over rows and vectors of residual / bound (< 1 when accepted)
                                // +infinity when a gate (dtype, shape, NaN/Inf) rejected the tile
    double residual = 0.0;      // the residual at that maximum
    double bound = 0.0;         // the bound at that maximum
    std::string reason;         // why a tile was rejected; empty when accepted
};

// Checks that c ≈ a·b for a (m×k), b (k×n), c (m×n) views of one dtype (f32 or f64).
MatmulCheckReport checkMatmulTile(const core::MatrixView& a, const core::MatrixView& b,
                                  const core::MatrixView& c, const MatmulCheckOptions& options);

// The random vectors r of a check and B·r, |B|·|r| for one block of B's columns. Tiles that share
// the column block can share it, so B is read once per column block instead of once per tile.
// Immutable once made; share it across threads as shared_ptr<const ColumnProbe>.
struct ColumnProbe {
    core::DType dtype = core::DType::F32;
    std::int64_t k = 0, n = 0;
    int vectors = 0;
    std::vector<double> values, magnitudes;       // r_v and |r_v|, n entries per vector
    std::vector<double> signedSums, absoluteSums; // (B·r_v)_i and (|B|·|r_v|)_i, k per vector
};

// Needs b of dtype f32 or f64 (asserted); uses options.seed and options.vectors.
ColumnProbe probeColumns(const core::MatrixView& b, const MatmulCheckOptions& options);

// The same check with a probe made by probeColumns(b, …) for this b.
MatmulCheckReport checkMatmulTileWithProbe(const core::MatrixView& a, const core::MatrixView& b,
                                           const core::MatrixView& c, const ColumnProbe& probe);

} // namespace goblin::verify
