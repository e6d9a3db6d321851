// Reference kernels of conv2d (NCHW input, OIHW weight, I = C/groups) and its input and weight
// gradients. Positions in the zero padding contribute nothing (they are skipped, not multiplied).
// Accumulation orders are fixed: conv2d c, kh, kw; input grad o, kh, kw; weight grad n, oh, ow.
#include <algorithm>

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
                        for (std::int64_t oy = 0; oy < g.oh; ++oy) {
                            const std::int64_t iy =
                                oy * p.stride[0] - p.padding[0] + ky * p.dilation[0];
                            if (iy < 0 || iy >= g.h)
                                continue;
                            const T* row = x + g.x(b, first + ch, iy, 0);
                            T* out = plane + oy * g.ow;
                            for (std::int64_t ox = columns.first; ox < columns.last; ++ox)
                                out[ox] = out[ox] + row[ox * p.stride[1] + offset] * weight;
                        }
                    }
        }
}

// The output position that reads input position `in` through kernel tap `k`, or −1.
std::int64_t outputOf(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t padding,
                      std::int64_t dilation, std::int64_t outSize) {
    const std::int64_t shifted = in + padding - k * dilation;
    if (shifted < 0 || shifted % stride != 0 || shifted / stride >= outSize)
        return -1;
    return shifted / stride;
}

template <class T>
void inputGrad(const T* gy, const T* w, const ConvGeometry& g, const Conv2dParams& p, T* gx) {
    for (std::int64_t b = 0; b < g.n; ++b)
        for (std::int64_t ch = 0; ch < g.c; ++ch) {
            const std::int64_t group = ch / g.ci, local = ch % g.ci;
            for (std::int64_t iy = 0; iy < g.h; ++iy)
                for (std::int64_t ix = 0; ix < g.w; ++ix) {
                    T acc = 0;
                    for (std::int64_t oc = group * g.outPerGroup();
                         oc < (group + 1) * g.outPerGroup(); ++oc)
                        for (std::int64_t ky = 0; ky < g.kh; ++ky) {
                            const std::int64_t oy =
                                outputOf(iy, ky, p.stride[0], p.padding[0], p.dilation[0], g.oh);
                            if (oy < 0)
                                continue;
                            for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                                const std::int64_t ox = outputOf(ix, kx, p.stride[1], p.padding[1],
                                                                 p.dilation[1], g.ow);
                                if (ox >= 0)
                                    acc =
                                        acc + gy[g.out(b, oc, oy, ox)] * w[g.wt(oc, local, ky, kx)];
                            }
                        }
                    gx[g.x(b, ch, iy, ix)] = acc;
                }
        }
}

template <class T>
void weightGrad(const T* x, const T* gy, const ConvGeometry& g, const Conv2dParams& p, T* gw) {
    for (std::int64_t oc = 0; oc < g.o; ++oc) {
        const std::int64_t first = oc / g.outPerGroup() * g.ci;
        for (std::int64_t ch = 0; ch < g.ci; ++ch)
            for (std::int64_t ky = 0; ky < g.kh; ++ky)
                for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                    T acc = 0;
                    for (std::int64_t b = 0; b < g.n; ++b)
                        for (std::int64_t oy = 0; oy < g.oh; ++oy) {
                            const std::int64_t iy =
                                oy * p.stride[0] - p.padding[0] + ky * p.dilation[0];
                            if (iy < 0 || iy >= g.h)
                                continue;
                            for (std::int64_t ox = 0; ox < g.ow; ++ox) {
                                const std::int64_t ix =
                                    ox * p.stride[1] - p.padding[1] + kx * p.dilation[1];
                                if (ix >= 0 && ix < g.w)
                                    acc = acc +
                                          gy[g.out(b, oc, oy, ox)] * x[g.x(b, first + ch, iy, ix)];
                            }
                        }
                    gw[g.wt(oc, ch, ky, kx)] = acc;
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
