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
#include <vector>

#include "goblin/core/finite_values.hpp"
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

// A panel's columns j0 … j0+width−1 when they are an image's positions in C order (`across`
// per row): runs along one row each, a run's panel columns j … j+length−1 at row `row`, columns
// `column` … column+length−1.
struct RowRuns {
    struct Run {
        std::int64_t j, length, row, column;
    };
    Run runs[32];
    std::int64_t count = 0;
    RowRuns(std::int64_t j0, std::int64_t width, std::int64_t across) {
        for (std::int64_t j = 0; j < width; j += runs[count++].length) {
            const std::int64_t row = (j0 + j) / across, column = (j0 + j) % across;
            runs[count] = {j, std::min(width - j, across - column), row, column};
        }
    }
    const Run* begin() const { return runs; }
    const Run* end() const { return runs + count; }
};
static_assert(kPanelColumns<float> <= 32 && kPanelColumns<double> <= 32);

// Writes into[t] = from[at + (t − lo)·step] for t in [lo, hi) and 0 for the rest of [0, length).
template <class T>
void copyRun(const T* from, std::int64_t at, std::int64_t step, std::int64_t lo, std::int64_t hi,
             std::int64_t length, T* into) {
    std::fill(into, into + lo, T(0));
    if (step == 1 && hi > lo) // `at` may lie outside the image when nothing is read
        std::copy_n(from + at, hi - lo, into + lo);
    else
        for (std::int64_t t = lo; t < hi; ++t, at += step)
            into[t] = from[at];
    std::fill(into + hi, into + length, T(0));
}

// conv2d, per image and group: y_g (O/groups × oh·ow) = w_g (O/groups × (c, kh, kw)) · the taps
// of x (rows (c, kh, kw), columns (oh, ow)). A panel row is one tap over a few output rows: in
// each, the output columns that read inside the image are a range (insideColumns), copied.
template <class T> void conv2dAsGemm(const T* x, const T* w, const Taps& g, T* y) {
    const std::int64_t og = g.outPerGroup(), taps = g.kh * g.kw, depth = g.ci * taps;
    const std::int64_t plane = g.oh * g.ow;
    std::vector<ColumnRange> readable;
    for (std::int64_t kx = 0; kx < g.kw; ++kx)
        readable.push_back(insideColumns(kx, g));
    std::vector<T> panel;
    for (std::int64_t b = 0; b < g.n; ++b)
        for (std::int64_t group = 0; group < g.groups; ++group) {
            const T* image = x + g.x(b, group * g.ci, 0, 0);
            const auto gather = [&](std::int64_t l0, std::int64_t rows, std::int64_t j0,
                                    std::int64_t width, T* to) {
                const RowRuns out(j0, width, g.ow);
                for (std::int64_t l = l0; l < l0 + rows; ++l, to += kPanelColumns<T>) {
                    const auto [c, ky, kx] = g.tapAt(l);
                    const T* channel = image + c * g.h * g.w;
                    for (const RowRuns::Run& run : out) {
                        const std::int64_t iy = g.inputRow(run.row, ky);
                        const std::int64_t end = run.column + run.length;
                        const std::int64_t lo = std::clamp(readable[kx].first, run.column, end);
                        const std::int64_t hi =
                            g.insideRow(iy) ? std::clamp(readable[kx].last, lo, end) : lo;
                        copyRun(channel, iy * g.w + g.inputColumn(lo, kx), g.p.stride[1],
                                lo - run.column, hi - run.column, run.length, to + run.j);
                    }
                }
            };
            sequentialGemm(w + g.wt(group * og, 0, 0, 0), depth, og, depth, plane, gather,
                           GemmOutput<T>{y + g.out(b, group * og, 0, 0), plane}, panel);
        }
}

// Input gradient, per image and group: dx_g (C/groups × h·w) = w_gᵀ (C/groups × (o, kh, kw)) ·
// the taps of dy that reach each input position (rows (o, kh, kw), columns (h, w)). With stride
// 1 the input columns a tap reaches in a row are a range, copied; otherwise element by element.
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
                const RowRuns in(j0, width, g.w);
                for (std::int64_t l = l0; l < l0 + rows; ++l, to += kPanelColumns<T>) {
                    const auto [o, ky, kx] = g.tapAt(l);
                    const T* channel = grads + o * g.oh * g.ow;
                    for (const RowRuns::Run& run : in) {
                        const std::int64_t oy = g.outputRow(run.row, ky);
                        T* into = to + run.j;
                        if (oy < 0) {
                            std::fill_n(into, run.length, T(0));
                        } else if (g.p.stride[1] == 1) { // ox = ix − shift ∈ [0, ow)
                            const std::int64_t shift = g.inputColumn(0, kx),
                                               end = run.column + run.length;
                            const std::int64_t lo = std::clamp(shift, run.column, end);
                            const std::int64_t hi = std::clamp(shift + g.ow, lo, end);
                            copyRun(channel, oy * g.ow + lo - shift, 1, lo - run.column,
                                    hi - run.column, run.length, into);
                        } else {
                            for (std::int64_t t = 0; t < run.length; ++t) {
                                const std::int64_t ox = g.outputColumn(run.column + t, kx);
                                into[t] = ox >= 0 ? channel[oy * g.ow + ox] : T(0);
                            }
                        }
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
// the sums the previous one left in dw. A panel row is one output position read through the
// panel's taps: where all of them read inside the image, at fixed offsets from the position.
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
                // Column j is tap (ky, kx) of a channel: it reads input (inputRow(oy, ky),
                // inputColumn(ox, kx)) = (oy·stride + down[j], ox·stride + across[j]).
                std::int64_t offset[kPanelColumns<T>], down[kPanelColumns<T>],
                    across[kPanelColumns<T>];
                for (std::int64_t j = 0; j < width; ++j) {
                    const auto [c, ky, kx] = g.tapAt(j0 + j);
                    down[j] = g.inputRow(0, ky);
                    across[j] = g.inputColumn(0, kx);
                    offset[j] = c * g.h * g.w + down[j] * g.w + across[j];
                }
                const auto [top, bottom] = std::minmax_element(down, down + width);
                const auto [left, right] = std::minmax_element(across, across + width);
                for (std::int64_t l = l0; l < l0 + rows; ++l, to += kPanelColumns<T>) {
                    const std::int64_t iy = l / g.ow * g.p.stride[0];
                    const std::int64_t ix = l % g.ow * g.p.stride[1];
                    const std::int64_t at = iy * g.w + ix;
                    if (g.inside(iy + *top, ix + *left) && g.inside(iy + *bottom, ix + *right)) {
                        for (std::int64_t j = 0; j < width; ++j)
                            to[j] = image[at + offset[j]];
                        continue;
                    }
                    for (std::int64_t j = 0; j < width; ++j)
                        to[j] =
                            g.inside(iy + down[j], ix + across[j]) ? image[at + offset[j]] : T(0);
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
            const bool finite = core::allFinite(args[1].values<T>());
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
