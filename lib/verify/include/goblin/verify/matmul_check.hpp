// Verification of a matmul tile: shape/dtype and NaN/Inf gates, then Freivalds' check in float64
// against a sound rounding bound scaled by |A||B| (docs/protocol.md, "Verification").
// Pure functions; safe on any thread (the caller owns the memory the views point to).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "goblin/core/tensor.hpp"

namespace goblin::verify {

// Unit roundoff of a floating-point dtype: 2^-24 for f32, 2^-53 for f64.
double unitRoundoff(core::DType dtype);
// γ_n(u) = n·u / (1 − n·u); +infinity when n·u ≥ 1.
double gamma(std::int64_t n, double unitRoundoff);

// The first non-finite element of a floating-point view, as (row, col), if any.
std::optional<std::pair<std::int64_t, std::int64_t>> findNonFinite(const core::MatrixView& view);

struct MatmulCheckOptions {
    int vectors = 2;         // independent random vectors, at least 2
    std::uint64_t seed = 0;  // randomness is injected so tests are repeatable
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

} // namespace goblin::verify
