// Index geometry shared by inference and every backend's kernels: Python-style slice clamping and
// the parameters and output sizes of conv2d and max_pool2d (docs/ops.md). Pure functions; any
// thread.
#pragma once

#include <array>
#include <cstdint>

#include "goblin/core/error.hpp"
#include "goblin/core/ops/attributes.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::core::ops {

// The elements x[start], x[start + step], … (length of them) that slice selects from a dim of
// `size`, after PyTorch's clamping: negative start/end count from the end, then both are clamped
// to [0, size] and end to ≥ start. step ≥ 1 (checked by inference).
struct SliceRange {
    std::int64_t start = 0;
    std::int64_t length = 0;
};
SliceRange sliceRange(std::int64_t size, std::int64_t start, std::int64_t end, std::int64_t step);

using Pair = std::array<std::int64_t, 2>; // (height, width)

// conv2d, conv2d_input_grad and conv2d_weight_grad: stride ≥ 1, padding ≥ 0, dilation ≥ 1,
// groups ≥ 1; defaults (1, 1), (0, 0), (1, 1), 1.
struct Conv2dParams {
    Pair stride{1, 1};
    Pair padding{0, 0};
    Pair dilation{1, 1};
    std::int64_t groups = 1;
};
Expected<Conv2dParams> conv2dParams(const Attributes& attrs);

// The sizes of one convolution — input [n, c, h, w], weight [o, ci, kh, kw], output [n, o, oh, ow]
// — and the C-order offsets of an element of each, for every backend and checker.
struct Conv2dGeometry {
    std::int64_t n, c, h, w, o, ci, kh, kw, oh, ow, groups;
    std::int64_t outPerGroup() const { return o / groups; }
    std::int64_t x(std::int64_t b, std::int64_t ch, std::int64_t y, std::int64_t z) const {
        return ((b * c + ch) * h + y) * w + z;
    }
    std::int64_t wt(std::int64_t oc, std::int64_t ch, std::int64_t y, std::int64_t z) const {
        return ((oc * ci + ch) * kh + y) * kw + z;
    }
    std::int64_t out(std::int64_t b, std::int64_t oc, std::int64_t y, std::int64_t z) const {
        return ((b * o + oc) * oh + y) * ow + z;
    }
};
// Shapes of rank 4 (asserted by the callers' inference).
Conv2dGeometry conv2dGeometry(const core::Shape& input, const core::Shape& weight,
                              const core::Shape& output, std::int64_t groups);

// Where a convolution's taps read (docs/ops.md), for every kernel and checker: tap (ky, kx) of
// output (oy, ox) reads input (inputRow(oy, ky), inputColumn(ox, kx)) when that is inside the
// image, and is skipped otherwise; outputRow and outputColumn invert it for the input gradient.
struct Conv2dTaps : Conv2dGeometry {
    Conv2dParams p;
    std::int64_t inputRow(std::int64_t oy, std::int64_t ky) const {
        return oy * p.stride[0] - p.padding[0] + ky * p.dilation[0];
    }
    std::int64_t inputColumn(std::int64_t ox, std::int64_t kx) const {
        return ox * p.stride[1] - p.padding[1] + kx * p.dilation[1];
    }
    bool insideRow(std::int64_t iy) const { return iy >= 0 && iy < h; }
    bool insideColumn(std::int64_t ix) const { return ix >= 0 && ix < w; }
    bool inside(std::int64_t iy, std::int64_t ix) const {
        return insideRow(iy) && insideColumn(ix);
    }
    // Index q of (channel, ky, kx) in C order over [channels][kh][kw] (a weight row's layout),
    // split up.
    struct Tap {
        std::int64_t channel, ky, kx;
    };
    Tap tapAt(std::int64_t q) const { return {q / (kh * kw), q % (kh * kw) / kw, q % kw}; }
    // The output row (column) whose tap ky (kx) reads input row iy (column ix), or −1 where
    // none does (the stride steps over it, or it lies past the output).
    std::int64_t outputRow(std::int64_t iy, std::int64_t ky) const {
        return outputOf(iy + p.padding[0] - ky * p.dilation[0], p.stride[0], oh);
    }
    std::int64_t outputColumn(std::int64_t ix, std::int64_t kx) const {
        return outputOf(ix + p.padding[1] - kx * p.dilation[1], p.stride[1], ow);
    }

private:
    static std::int64_t outputOf(std::int64_t shifted, std::int64_t stride, std::int64_t size) {
        if (shifted < 0)
            return -1;
        if (stride == 1) // no division for the common case
            return shifted < size ? shifted : -1;
        return shifted % stride == 0 && shifted / stride < size ? shifted / stride : -1;
    }
};
Conv2dTaps conv2dTaps(const core::Shape& input, const core::Shape& weight,
                      const core::Shape& output, const Conv2dParams& params);

// The max_pool2d family: kernel required; stride absent or empty = kernel; padding ≤ kernel/2.
struct Pool2dParams {
    Pair kernel{1, 1};
    Pair stride{1, 1};
    Pair padding{0, 0};
    Pair dilation{1, 1};
    bool ceilMode = false;
};
Expected<Pool2dParams> pool2dParams(const Attributes& attrs);

// Output length of a convolution along one dim: (in + 2p − d(k−1) − 1)/s + 1, or ShapeMismatch
// when the dilated kernel does not fit the padded input.
Expected<std::int64_t> convOutputSize(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                                      std::int64_t padding, std::int64_t dilation);
// PyTorch's pooling_output_shape (ceil_mode drops a last window that would start in the padding),
// or ShapeMismatch when it is < 1.
Expected<std::int64_t> poolOutputSize(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                                      std::int64_t padding, std::int64_t dilation, bool ceilMode);

} // namespace goblin::core::ops
