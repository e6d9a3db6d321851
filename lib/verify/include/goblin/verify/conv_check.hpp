// The cheap audit's check of a claimed convolution value (conv2d, conv2d_input_grad,
// conv2d_weight_grad; f32 or f64) without recomputing it. Each is a matmul per group in disguise:
//   conv2d:      y[(n,oh,ow), o] = Σ_(c,kh,kw) im2col(x)[(n,oh,ow), (c,kh,kw)] · w[o, (c,kh,kw)]
//   input grad:  dx[(n,h,w), c]  = Σ_(o,kh,kw) gather(dy)[(n,h,w), (o,kh,kw)] · w[o, c, kh, kw]
//   weight grad: dw[o, (c,kh,kw)] = Σ_(n,oh,ow) dy[n, o, (oh,ow)] · im2col(x)[(n,oh,ow), (c,kh,kw)]
// (zero where a tap falls in the padding, which the reference skips: the same sum). The node
// builds those operands in the value's dtype, a batch image at a time where the rows allow it,
// and checks the claim with the matmul tile check (checkMatmulTileWithProbe: Freivalds per
// block of output columns in float64, the per-element bound γ_K·(|A||B|)_ij, calibrated threshold
// and grey zone; docs/verification.md, "Matmul tiles"). For conv2d, A·(B·r) is the convolution of
// x with Σ_o r_o·w[o]: one output channel per vector and block instead of O/groups.
// Pure; any thread (the random source must be that thread's).
#pragma once

#include <span>
#include <string>

#include "goblin/core/graph/graph.hpp"
#include "goblin/core/random_source.hpp"
#include "goblin/core/tensor.hpp"
#include "goblin/verify/grey_zone.hpp"
#include "goblin/verify/matmul_check.hpp"

namespace goblin::verify {

struct ConvCheckReport {
    // Escalate: NaN/Inf somewhere, an empty reduction, or a grey-zone block: recompute the node.
    Verdict verdict = Verdict::Rejected;
    double maxErrorRatio = 0.0; // worst estimated element error ÷ its own bound
    std::string reason;         // why it was rejected or escalated
};

// The reduction size K of a conv node (the matmul's inner size) and its output columns per group
// (the matmul's n: O/groups for conv2d, C/groups for the input gradient; the weight gradient's
// rows O/groups, which is what saves work there). Zero for any other op.
struct ConvSizes {
    std::int64_t inner = 0;
    std::int64_t perGroup = 0;
};
ConvSizes convSizesOf(const core::graph::GraphNode& node, const core::graph::GraphPlan& plan);

// `args` the node's two operands, `claim` its claimed value (shapes as the plan says).
ConvCheckReport checkClaimedConv(const core::graph::GraphNode& node,
                                 std::span<const core::Tensor> args, const core::Tensor& claim,
                                 const MatmulCheckOptions& options, core::RandomSource& random,
                                 GreyZone greyZone = GreyZone::RecomputeBitwise);

} // namespace goblin::verify
