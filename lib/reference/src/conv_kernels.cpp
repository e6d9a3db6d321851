// Reference kernels of conv2d (NCHW input, OIHW weight, I = C/groups) and its input and weight
// gradients. Positions in the zero padding contribute nothing (they are skipped, not multiplied).
// Accumulation orders are fixed: conv2d c, kh, kw; input grad o, kh, kw; weight grad n, oh, ow.
//
// Each is a matrix product per image and group with its taps gathered as one operand
// (sequentialGemm), 0 where a tap is skipped. That gives the skipping kernels' bits whenever the
// other operand is finite: a skipped tap then adds w·0 = ±0, which leaves a sum that started from
// +0 unchanged (such a sum is never −0). With a non-finite weight (or grad_out, for the weight
// gradient) w·0 would be NaN, so those run the tap-by-tap kernels, which skip.
#include <algorithm>
#include <cmath>
#include <vector>

#include "goblin/core/ops/op_geometry.hpp"
#include "kernels.hpp"
#include "sequential_gemm.hpp"

namespace goblin::reference::detail {
namespace {

using Taps = core::ops::Conv2dTaps;

// The output columns [first, last) whose tap kx reads an input column inside the image.
struct ColumnRange {
    std::int64_t first = 0, last = 0;
};
ColumnRange insideColumns(std::int64_t kx, const Taps& g) {
    // inputColumn(ox, kx) = ox·stride + offset ∈ [0, w)
    const std::int64_t offset = g.inputColumn(0, kx), stride = g.p.stride[1];
    const std::int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    const std::int64_t last = g.w - offset <= 0 ? 0 : (g.w - offset + stride - 1) / stride;
    return {std::min(first, g.ow), std::clamp<std::int64_t>(last, 0, g.ow)};
}

// Calls visit(oy, iy) for each output row whose tap ky reads input row iy inside the image.
template <class Visit> void forEachTapRow(std::int64_t ky, const Taps& g, Visit&& visit) {
    for (std::int64_t oy = 0; oy < g.oh; ++oy)
        if (const std::int64_t iy = g.inputRow(oy, ky); g.insideRow(iy))
            visit(oy, iy);
}

// Each output element sums its taps in the order c, kh, kw, skipping those in the padding, from
// 0: the loops run tap by tap over a whole output plane (so the innermost loop over output columns
// vectorises), but every element still adds the same products in the same order.
template <class T> void conv2d(const T* x, const T* w, const Taps& g, T* y) {
    for (std::int64_t b = 0; b < g.n; ++b)
        for (std::int64_t oc = 0; oc < g.o; ++oc) {
            const std::int64_t first = oc / g.outPerGroup() * g.ci;
            T* plane = y + g.out(b, oc, 0, 0);
            std::fill(plane, plane + g.oh * g.ow, T(0));
            for (std::int64_t ch = 0; ch < g.ci; ++ch)
                for (std::int64_t ky = 0; ky < g.kh; ++ky)
                    for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                        const T weight = w[g.wt(oc, ch, ky, kx)];
                        const ColumnRange columns = insideColumns(kx, g);
                        const std::int64_t offset = g.inputColumn(0, kx);
                        forEachTapRow(ky, g, [&](std::int64_t oy, std::int64_t iy) {
                            const T* row = x + g.x(b, first + ch, iy, 0);
                            T* out = plane + oy * g.ow;
                            for (std::int64_t ox = columns.first; ox < columns.last; ++ox)
                                out[ox] = out[ox] + row[ox * g.p.stride[1] + offset] * weight;
                        });
                    }
        }
}

// Each input element sums its products in the order o, kh, kw from 0, skipping taps in the
// padding: the loops run tap by tap over whole planes (so the innermost loop over output columns
// vectorises), and every element still adds the same products in the same order.
template <class T> void inputGrad(const T* gy, const T* w, const Taps& g, T* gx) {
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
                        const ColumnRange columns = insideColumns(kx, g);
                        const std::int64_t offset = g.inputColumn(0, kx);
                        forEachTapRow(ky, g, [&](std::int64_t oy, std::int64_t iy) {
                            const T* row = gy + g.out(b, oc, oy, 0);
                            T* in = plane + iy * g.w;
                            if (g.p.stride[1] == 1)
                                for (std::int64_t ox = columns.first; ox < columns.last; ++ox)
                                    in[ox + offset] = in[ox + offset] + row[ox] * weight;
                            else
                                for (std::int64_t ox = columns.first; ox < columns.last; ++ox)
                                    in[ox * g.p.stride[1] + offset] =
                                        in[ox * g.p.stride[1] + offset] + row[ox] * weight;
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
template <class T> void weightGrad(const T* x, const T* gy, const Taps& g, T* gw) {
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
                                const std::int64_t iy = g.inputRow(oy, ky);
                                if (!g.insideRow(iy))
                                    continue;
                                for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                                    const std::int64_t ix = g.inputColumn(ox, kx);
                                    if (!g.insideColumn(ix))
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

template <class T> bool allFinite(const T* values, std::int64_t count) {
    return std::all_of(values, values + count, [](T v) { return std::isfinite(v); });
}

// The output position (row, column) of each of a panel's columns j0 … j0+width−1, where the
// columns are an image's positions in C order (`across` of them per row).
struct PanelPositions {
    std::int64_t row[32], column[32];
    PanelPositions(std::int64_t j0, std::int64_t width, std::int64_t across) {
        for (std::int64_t j = 0; j < width; ++j) {
            row[j] = (j0 + j) / across;
            column[j] = (j0 + j) % across;
        }
    }
};
static_assert(kPanelColumns<float> <= 32 && kPanelColumns<double> <= 32);

// conv2d, per image and group: y_g (O/groups × oh·ow) = w_g (O/groups × (c, kh, kw)) · the taps
// of x (rows (c, kh, kw), columns (oh, ow)).
template <class T> void conv2dAsGemm(const T* x, const T* w, const Taps& g, T* y) {
    const std::int64_t og = g.outPerGroup(), taps = g.kh * g.kw, depth = g.ci * taps;
    const std::int64_t plane = g.oh * g.ow;
    std::vector<T> panel;
    for (std::int64_t b = 0; b < g.n; ++b)
        for (std::int64_t group = 0; group < g.groups; ++group) {
            const T* image = x + g.x(b, group * g.ci, 0, 0);
            const auto gather = [&](std::int64_t l0, std::int64_t rows, std::int64_t j0,
                                    std::int64_t width, T* to) {
                const PanelPositions out(j0, width, g.ow);
                for (std::int64_t l = l0; l < l0 + rows; ++l, to += kPanelColumns<T>) {
                    const T* channel = image + l / taps * g.h * g.w;
                    const std::int64_t ky = l % taps / g.kw, kx = l % g.kw;
                    for (std::int64_t j = 0; j < width; ++j) {
                        const std::int64_t iy = g.inputRow(out.row[j], ky);
                        const std::int64_t ix = g.inputColumn(out.column[j], kx);
                        to[j] = g.inside(iy, ix) ? channel[iy * g.w + ix] : T(0);
                    }
                }
            };
            sequentialGemm(w + g.wt(group * og, 0, 0, 0), depth, og, depth, plane, gather,
                           GemmOutput<T>{y + g.out(b, group * og, 0, 0), plane}, panel);
        }
}

// Input gradient, per image and group: dx_g (C/groups × h·w) = w_gᵀ (C/groups × (o, kh, kw)) ·
// the taps of dy that reach each input position (rows (o, kh, kw), columns (h, w)).
template <class T> void inputGradAsGemm(const T* gy, const T* w, const Taps& g, T* gx) {
    const std::int64_t og = g.outPerGroup(), taps = g.kh * g.kw, depth = og * taps;
    const std::int64_t plane = g.h * g.w;
    std::vector<T> transposed(static_cast<std::size_t>(g.ci * depth)), panel;
    for (std::int64_t group = 0; group < g.groups; ++group) {
        for (std::int64_t ch = 0; ch < g.ci; ++ch)
            for (std::int64_t oc = 0; oc < og; ++oc)
                std::copy_n(w + g.wt(group * og + oc, ch, 0, 0), taps,
                            transposed.begin() + ch * depth + oc * taps);
        for (std::int64_t b = 0; b < g.n; ++b) {
            const T* grads = gy + g.out(b, group * og, 0, 0);
            const auto gather = [&](std::int64_t l0, std::int64_t rows, std::int64_t j0,
                                    std::int64_t width, T* to) {
                const PanelPositions in(j0, width, g.w);
                for (std::int64_t l = l0; l < l0 + rows; ++l, to += kPanelColumns<T>) {
                    const T* channel = grads + l / taps * g.oh * g.ow;
                    const std::int64_t ky = l % taps / g.kw, kx = l % g.kw;
                    for (std::int64_t j = 0; j < width; ++j) {
                        const std::int64_t oy = g.outputRow(in.row[j], ky);
                        const std::int64_t ox = g.outputColumn(in.column[j], kx);
                        to[j] = oy >= 0 && ox >= 0 ? channel[oy * g.ow + ox] : T(0);
                    }
                }
            };
            sequentialGemm(transposed.data(), depth, g.ci, depth, plane, gather,
                           GemmOutput<T>{gx + g.x(b, group * g.ci, 0, 0), plane}, panel);
        }
    }
}

// Weight gradient, per group: dw_g (O/groups × (c, kh, kw)) = Σ over images, in order, of dy_g
// (O/groups × oh·ow) · the taps of x (rows (oh, ow), columns (c, kh, kw)): each image continues
// the sums the previous one left in dw.
template <class T> void weightGradAsGemm(const T* x, const T* gy, const Taps& g, T* gw) {
    const std::int64_t og = g.outPerGroup(), taps = g.kh * g.kw, columns = g.ci * taps;
    const std::int64_t plane = g.oh * g.ow;
    std::fill(gw, gw + g.o * columns, T(0));
    std::vector<T> panel;
    for (std::int64_t group = 0; group < g.groups; ++group)
        for (std::int64_t b = 0; b < g.n; ++b) {
            const T* image = x + g.x(b, group * g.ci, 0, 0);
            const auto gather = [&](std::int64_t l0, std::int64_t rows, std::int64_t j0,
                                    std::int64_t width, T* to) {
                // Column j is tap (ky, kx) of one channel: (row, column) of the panel positions.
                PanelPositions tap(j0, width, g.kw);
                std::int64_t channel[kPanelColumns<T>];
                for (std::int64_t j = 0; j < width; ++j) {
                    channel[j] = tap.row[j] / g.kh * g.h * g.w;
                    tap.row[j] %= g.kh;
                }
                for (std::int64_t l = l0; l < l0 + rows; ++l, to += kPanelColumns<T>) {
                    const std::int64_t oy = l / g.ow, ox = l % g.ow;
                    for (std::int64_t j = 0; j < width; ++j) {
                        const std::int64_t iy = g.inputRow(oy, tap.row[j]);
                        const std::int64_t ix = g.inputColumn(ox, tap.column[j]);
                        to[j] = g.inside(iy, ix) ? image[channel[j] + iy * g.w + ix] : T(0);
                    }
                }
            };
            sequentialGemm(gy + g.out(b, group * og, 0, 0), plane, og, plane, columns, gather,
                           GemmOutput<T>{gw + g.wt(group * og, 0, 0, 0), columns, false}, panel);
        }
}

} // namespace

Expected<Tensor> runConvOp(OpCode op, Args args, const Attributes& attrs, const TensorSpec& spec) {
    auto out = Tensor::allocate(spec.dtype, spec.shape);
    if (!out)
        return out;
    const core::ops::Conv2dParams params = core::ops::conv2dParams(attrs).value();
    const Shape& input = op == OpCode::Conv2dInputGrad ? spec.shape : args[0].shape();
    const Shape& weight = op == OpCode::Conv2d            ? args[1].shape()
                          : op == OpCode::Conv2dInputGrad ? args[1].shape()
                                                          : spec.shape;
    const Shape& output = op == OpCode::Conv2d            ? spec.shape
                          : op == OpCode::Conv2dInputGrad ? args[0].shape()
                                                          : args[1].shape();
    const Taps g = core::ops::conv2dTaps(input, weight, output, params);
    visitDType(spec.dtype, [&](auto t) {
        using T = decltype(t);
        if constexpr (std::is_floating_point_v<T>) {
            const T* a = args[0].values<T>().data();
            const T* b = args[1].values<T>().data();
            T* result = out->values<T>().data();
            // The operand a skipped tap would multiply by 0 (the weight, or grad_out) must be
            // finite; with fewer than kGemmRows rows a product gathers more than it multiplies
            // (an input gradient of 3 channels: 4 GFLOP/s as a product, 12 tap by tap).
            constexpr std::int64_t kGemmRows = 8;
            const bool finite = op == OpCode::Conv2dWeightGrad
                                    ? allFinite(b, g.n * g.o * g.oh * g.ow)
                                    : allFinite(b, g.o * g.ci * g.kh * g.kw);
            const bool gemm =
                finite && (op == OpCode::Conv2dInputGrad ? g.ci : g.outPerGroup()) >= kGemmRows;
            if (op == OpCode::Conv2d)
                gemm ? conv2dAsGemm(a, b, g, result) : conv2d(a, b, g, result);
            else if (op == OpCode::Conv2dInputGrad)
                gemm ? inputGradAsGemm(a, b, g, result) : inputGrad(a, b, g, result);
            else
                gemm ? weightGradAsGemm(a, b, g, result) : weightGrad(a, b, g, result);
        }
    });
    return out;
}

} // namespace goblin::reference::detail
