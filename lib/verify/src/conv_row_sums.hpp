// The row side of a convolution's Freivalds check, computed from the convolution's own operands
// instead of its gathered matmul operand A (conv_check.hpp). A row of A times a probe column of B
// (a kernel over A's columns) is, for conv2d, x correlated with that kernel at one output
// position; for the input gradient, dy carried back through that kernel to one input position.
// Both are computed here eight neighbouring positions of a row at a time, their sums in registers
// over every tap, reading the operand's own rows (widened to float64 once, zero-padded), so the
// node never writes or reads A: plain float64 sums of the same k terms as detail::blockSums(A, …)
// of an f32 A (in another order, which its bounds allow), in its layout. For f32 operands (f64
// ones need compensated sums), probes of 2 vectors and convolutions of stride 1 along the width
// (rowSumsApply); the check gathers A otherwise. Private to goblin_verify. Pure.
#pragma once

#include <cstdint>
#include <vector>

#include "goblin/core/ops/op_geometry.hpp"
#include "goblin/core/random_source.hpp"
#include "goblin/verify/matmul_check.hpp"
#include "matmul_check_detail.hpp"

namespace goblin::verify::detail {

// Whether the functions below serve this convolution and probes of `vectors` vectors.
bool rowSumsApply(const core::ops::Conv2dTaps& g, int vectors);

// One block's kernels over A's k columns: its two signed probes, then its magnitude probe.
struct BlockKernels {
    const double* kernels[3] = {};
};
// The row side of `probe` (B·r_v and |B|·w of each block).
std::vector<BlockKernels> rowSideKernels(const ColumnProbe& probe);

// conv2d of one image and group: `channels` is x[b, group·ci, 0, 0]; A's rows are the output
// positions (oy, ox), its columns (channel, ky, kx); `probe` made for B = the group's weights
// (k = ci·kh·kw), as rowSideKernels(probe).
BlockSums forwardRowSums(const float* channels, const core::ops::Conv2dTaps& g,
                         const std::vector<BlockKernels>& blocks);

// conv2d_input_grad of one image and group: `planes` is dy[b, group·og, 0, 0]; A's rows are the
// input positions (iy, ix), its columns (output channel j, ky, kx); `probe` made for B = the
// group's weights as (j, ky, kx) × channel (k = og·kh·kw).
BlockSums inputGradRowSums(const float* planes, const core::ops::Conv2dTaps& g,
                           const std::vector<BlockKernels>& blocks);

// conv2d_weight_grad of group `group`, dw = dy·B with B = im2col of every image of x (rows
// (b, oy, ox), columns (channel, ky, kx)): probeColumns(B, …) made without B, from x itself
// (B's column magnitudes by prefix sums of x's rows, its rows' sums as conv2d sums of x against
// the column-side probes). Check the group with checkWithoutB(dy's rows, dw's rows, the probe).
ColumnProbe weightGradProbe(const float* x, std::int64_t group, const core::ops::Conv2dTaps& g,
                            const MatmulCheckOptions& options, core::RandomSource& random);

} // namespace goblin::verify::detail
