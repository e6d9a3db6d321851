// Reference kernels of conv2d (NCHW input, OIHW weight, I = C/groups) and its input and weight
// gradients. Positions in the zero padding contribute nothing (they are skipped, not multiplied).
// Accumulation orders are fixed: conv2d c, kh, kw; input grad o, kh, kw; weight grad n, oh, ow.
#include <algorithm>
#include <vector>

#include "goblin/core/ops/op_geometry.hpp"
#include "kernels.hpp"

namespace goblin::reference::detail {
namespace {

using core::ops::Conv2dParams;

using ConvGeometry = core::ops::Conv2dGeometry;

// The output columns [first, last) whose tap kx reads an input column inside the image.
struct ColumnRange {
    std::int64_t first = 0, last = 0;
};
ColumnRange insideColumns(std::int64_t kx, const ConvGeometry& g, const Conv2dParams& p) {
    const std::int64_t offset = kx * p.dilation[1] - p.padding[1], stride = p.stride[1];
    // ox·stride + offset ∈ [0, w)
    const std::int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    const std::int64_t last = g.w - offset <= 0 ? 0 : (g.w - offset + stride - 1) / stride;
    return {std::min(first, g.ow), std::clamp<std::int64_t>(last, 0, g.ow)};
}

// Calls visit(oy, iy) for each output row whose tap ky reads input row iy inside the image.
template <class Visit>
void forEachTapRow(std::int64_t ky, const ConvGeometry& g, const Conv2dParams& p, Visit&& visit) {
    for (std::int64_t oy = 0; oy < g.oh; ++oy) {
        const std::int64_t iy = oy * p.stride[0] - p.padding[0] + ky * p.dilation[0];
        if (iy >= 0 && iy < g.h)
            visit(oy, iy);
    }
}

// Each output element sums its taps in the order c, kh, kw, skipping those in the padding, from
// 0: the loops run tap by tap over a whole output plane (so the innermost loop over output columns
// vectorises), but every element still adds the same products in the same order.
template <class T>
void conv2d(const T* x, const T* w, const ConvGeometry& g, const Conv2dParams& p, T* y) {
    for (std::int64_t b = 0; b < g.n; ++b)
        for (std::int64_t oc = 0; oc < g.o; ++oc) {
            const std::int64_t first = oc / g.outPerGroup() * g.ci;
            T* plane = y + g.out(b, oc, 0, 0);
            std::fill(plane, plane + g.oh * g.ow, T(0));
            for (std::int64_t ch = 0; ch < g.ci; ++ch)
                for (std::int64_t ky = 0; ky < g.kh; ++ky)
                    for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                        const T weight = w[g.wt(oc, ch, ky, kx)];
                        const ColumnRange columns = insideColumns(kx, g, p);
                        const std::int64_t offset = kx * p.dilation[1] - p.padding[1];
                        forEachTapRow(ky, g, p, [&](std::int64_t oy, std::int64_t iy) {
                            const T* row = x + g.x(b, first + ch, iy, 0);
                            T* out = plane + oy * g.ow;
                            for (std::int64_t ox = columns.first; ox < columns.last; ++ox)
                                out[ox] = out[ox] + row[ox * p.stride[1] + offset] * weight;
                        });
                    }
        }
}

// Each input element sums its products in the order o, kh, kw from 0, skipping taps in the
// padding: the loops run tap by tap over whole planes (so the innermost loop over output columns
// vectorises), and every element still adds the same products in the same order.
template <class T>
void inputGrad(const T* gy, const T* w, const ConvGeometry& g, const Conv2dParams& p, T* gx) {
    for (std::int64_t b = 0; b < g.n; ++b)
        for (std::int64_t ch = 0; ch < g.c; ++ch) {
            const std::int64_t group = ch / g.ci, local = ch % g.ci;
            T* plane = gx + g.x(b, ch, 0, 0);
            std::fill(plane, plane + g.h * g.w, T(0));
            for (std::int64_t oc = group * g.outPerGroup(); oc < (group + 1) * g.outPerGroup();
                 ++oc)
                for (std::int64_t ky = 0; ky < g.kh; ++ky)
                    for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                        const T weight = w[g.wt(oc, local, ky, kx)];
                        const ColumnRange columns = insideColumns(kx, g, p);
                        const std::int64_t offset = kx * p.dilation[1] - p.padding[1];
                        forEachTapRow(ky, g, p, [&](std::int64_t oy, std::int64_t iy) {
                            const T* row = gy + g.out(b, oc, oy, 0);
                            T* in = plane + iy * g.w;
                            if (p.stride[1] == 1)
                                for (std::int64_t ox = columns.first; ox < columns.last; ++ox)
                                    in[ox + offset] = in[ox + offset] + row[ox] * weight;
                            else
                                for (std::int64_t ox = columns.first; ox < columns.last; ++ox)
                                    in[ox * p.stride[1] + offset] =
                                        in[ox * p.stride[1] + offset] + row[ox] * weight;
                        });
                    }
        }
}

// Each weight element sums its products in the order n, oh, ow from 0, skipping taps in the
// padding. Per group, block of up to kChannelsAtOnce output channels and input channel, the
// block's taps are summed at once: its grad_out planes are read transposed (output channels
// innermost), so the innermost loop runs over output channels and vectorises, while each element
// still adds its products in that order. The transposed copy holds kChannelsAtOnce channels, not
// all of grad_out.
template <class T>
void weightGrad(const T* x, const T* gy, const ConvGeometry& g, const Conv2dParams& p, T* gw) {
    constexpr std::int64_t kChannelsAtOnce = 32;
    const std::int64_t og = g.outPerGroup(), taps = g.kh * g.kw, plane = g.oh * g.ow;
    const std::int64_t width = std::min(og, kChannelsAtOnce);
    std::vector<T> transposed(static_cast<std::size_t>(g.n * plane * width)); // [(b, oy, ox)][j]
    std::vector<T> sums(static_cast<std::size_t>(taps * width));              // [(ky, kx)][j]
    for (std::int64_t group = 0; group < g.groups; ++group)
        for (std::int64_t offset = 0; offset < og; offset += width) {
            // Output channels [first, first + count), within the group.
            const std::int64_t first = group * og + offset, count = std::min(width, og - offset);
            for (std::int64_t j = 0; j < count; ++j)
                for (std::int64_t b = 0; b < g.n; ++b) {
                    const T* from = gy + g.out(b, first + j, 0, 0);
                    for (std::int64_t at = 0; at < plane; ++at)
                        transposed[static_cast<std::size_t>((b * plane + at) * width + j)] =
                            from[at];
                }
            for (std::int64_t ch = 0; ch < g.ci; ++ch) {
                std::fill(sums.begin(), sums.end(), T(0));
                for (std::int64_t b = 0; b < g.n; ++b) {
                    const T* image = x + g.x(b, group * g.ci + ch, 0, 0);
                    for (std::int64_t oy = 0; oy < g.oh; ++oy)
                        for (std::int64_t ox = 0; ox < g.ow; ++ox) {
                            const T* row =
                                transposed.data() + ((b * g.oh + oy) * g.ow + ox) * width;
                            for (std::int64_t ky = 0; ky < g.kh; ++ky) {
                                const std::int64_t iy =
                                    oy * p.stride[0] - p.padding[0] + ky * p.dilation[0];
                                if (iy < 0 || iy >= g.h)
                                    continue;
                                for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                                    const std::int64_t ix =
                                        ox * p.stride[1] - p.padding[1] + kx * p.dilation[1];
                                    if (ix < 0 || ix >= g.w)
                                        continue;
                                    const T value = image[iy * g.w + ix];
                                    T* sum = sums.data() + (ky * g.kw + kx) * width;
                                    for (std::int64_t j = 0; j < count; ++j)
                                        sum[j] = sum[j] + row[j] * value;
                                }
                            }
                        }
                }
                for (std::int64_t j = 0; j < count; ++j)
                    for (std::int64_t tap = 0; tap < taps; ++tap)
                        gw[g.wt(first + j, ch, 0, 0) + tap] =
                            sums[static_cast<std::size_t>(tap * width + j)];
            }
        }
}

} // namespace

Expected<Tensor> runConvOp(OpCode op, Args args, const Attributes& attrs, const TensorSpec& spec) {
    auto out = Tensor::allocate(spec.dtype, spec.shape);
    if (!out)
        return out;
    const Conv2dParams params = core::ops::conv2dParams(attrs).value();
    const Shape& input = op == OpCode::Conv2dInputGrad ? spec.shape : args[0].shape();
    const Shape& weight = op == OpCode::Conv2d            ? args[1].shape()
                          : op == OpCode::Conv2dInputGrad ? args[1].shape()
                                                          : spec.shape;
    const Shape& output = op == OpCode::Conv2d            ? spec.shape
                          : op == OpCode::Conv2dInputGrad ? args[0].shape()
                                                          : args[1].shape();
    const ConvGeometry g = core::ops::conv2dGeometry(input, weight, output, params.groups);
    visitDType(spec.dtype, [&](auto t) {
        using T = decltype(t);
        if constexpr (std::is_floating_point_v<T>) {
            const T* a = args[0].values<T>().data();
            const T* b = args[1].values<T>().data();
            T* result = out->values<T>().data();
            if (op == OpCode::Conv2d)
                conv2d(a, b, g, params, result);
            else if (op == OpCode::Conv2dInputGrad)
                inputGrad(a, b, g, params, result);
            else
                weightGrad(a, b, g, params, result);
        }
    });
    return out;
}

} // namespace goblin::reference::detail
