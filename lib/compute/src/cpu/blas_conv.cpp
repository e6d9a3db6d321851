// First: Eigen must see EIGEN_USE_BLAS before any of its headers.
#include "eigen_blas.hpp"

#include "goblin/compute/blas_conv.hpp"

#include <algorithm>
#include <vector>

#include "goblin/core/ops/op_catalog.hpp"
#include "goblin/core/ops/op_geometry.hpp"

namespace goblin::compute {
namespace {

using core::ops::Conv2dGeometry;
using core::ops::Conv2dParams;
using core::ops::OpCode;

// The input position a tap reads: row iy of (oy, ky), column ix of (ox, kx).
struct Taps {
    const Conv2dGeometry& g;
    const Conv2dParams& p;
    std::int64_t row(std::int64_t oy, std::int64_t ky) const {
        return oy * p.stride[0] - p.padding[0] + ky * p.dilation[0];
    }
    std::int64_t column(std::int64_t ox, std::int64_t kx) const {
        return ox * p.stride[1] - p.padding[1] + kx * p.dilation[1];
    }
    bool inside(std::int64_t iy, std::int64_t ix) const {
        return iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
    }
    // Visits the im2col matrix of image b's group channels, K = (ch, ky, kx) rows × M = (oy, ox)
    // columns in row-major order, with the input index each entry reads (−1 in the padding).
    template <class Visit> void walk(std::int64_t b, std::int64_t group, Visit&& visit) const {
        std::int64_t entry = 0;
        for (std::int64_t ch = 0; ch < g.ci; ++ch)
            for (std::int64_t ky = 0; ky < g.kh; ++ky)
                for (std::int64_t kx = 0; kx < g.kw; ++kx)
                    for (std::int64_t oy = 0; oy < g.oh; ++oy) {
                        const std::int64_t iy = row(oy, ky);
                        for (std::int64_t ox = 0; ox < g.ow; ++ox, ++entry) {
                            const std::int64_t ix = column(ox, kx);
                            visit(entry, inside(iy, ix) ? g.x(b, group * g.ci + ch, iy, ix) : -1);
                        }
                    }
    }
};

template <class T> using Matrix = Eigen::Map<RowMajorMatrix<T>>;
template <class T> using ConstMatrix = Eigen::Map<const RowMajorMatrix<T>>;

// y_g (O/groups × M) = w_g (O/groups × K) · columns (K × M), per image and group.
template <class T>
void forward(const T* x, const T* w, T* y, const Taps& taps, std::vector<T>& columns) {
    const Conv2dGeometry& g = taps.g;
    const Eigen::Index k = g.ci * g.kh * g.kw, m = g.oh * g.ow, og = g.outPerGroup();
    for (std::int64_t b = 0; b < g.n; ++b)
        for (std::int64_t group = 0; group < g.groups; ++group) {
            taps.walk(b, group, [&](std::int64_t entry, std::int64_t at) {
                columns[static_cast<std::size_t>(entry)] = at < 0 ? T(0) : x[at];
            });
            Matrix<T>(y + g.out(b, group * og, 0, 0), og, m).noalias() =
                ConstMatrix<T>(w + group * og * k, og, k) * ConstMatrix<T>(columns.data(), k, m);
        }
}

// columns (K × M) = w_gᵀ · grad_out_g, then each entry added to the input element it read.
template <class T>
void inputGradient(const T* gy, const T* w, T* gx, const Taps& taps, std::vector<T>& columns) {
    const Conv2dGeometry& g = taps.g;
    const Eigen::Index k = g.ci * g.kh * g.kw, m = g.oh * g.ow, og = g.outPerGroup();
    std::fill(gx, gx + g.n * g.c * g.h * g.w, T(0));
    for (std::int64_t b = 0; b < g.n; ++b)
        for (std::int64_t group = 0; group < g.groups; ++group) {
            Matrix<T>(columns.data(), k, m).noalias() =
                ConstMatrix<T>(w + group * og * k, og, k).transpose() *
                ConstMatrix<T>(gy + g.out(b, group * og, 0, 0), og, m);
            taps.walk(b, group, [&](std::int64_t entry, std::int64_t at) {
                if (at >= 0)
                    gx[at] += columns[static_cast<std::size_t>(entry)];
            });
        }
}

// grad_w_g (O/groups × K) = Σ over images of grad_out_g (O/groups × M) · columnsᵀ (M × K).
template <class T>
void weightGradient(const T* x, const T* gy, T* gw, const Taps& taps, std::vector<T>& columns) {
    const Conv2dGeometry& g = taps.g;
    const Eigen::Index k = g.ci * g.kh * g.kw, m = g.oh * g.ow, og = g.outPerGroup();
    std::fill(gw, gw + g.o * k, T(0));
    for (std::int64_t b = 0; b < g.n; ++b)
        for (std::int64_t group = 0; group < g.groups; ++group) {
            taps.walk(b, group, [&](std::int64_t entry, std::int64_t at) {
                columns[static_cast<std::size_t>(entry)] = at < 0 ? T(0) : x[at];
            });
            Matrix<T>(gw + group * og * k, og, k).noalias() +=
                ConstMatrix<T>(gy + g.out(b, group * og, 0, 0), og, m) *
                ConstMatrix<T>(columns.data(), k, m).transpose();
        }
}

template <class T>
void convolve(OpCode op, const core::Tensor& first, const core::Tensor& second, core::Tensor& out,
              const Taps& taps) {
    const Conv2dGeometry& g = taps.g;
    std::vector<T> columns(static_cast<std::size_t>(g.ci * g.kh * g.kw * g.oh * g.ow));
    const T* a = first.values<T>().data();
    const T* b = second.values<T>().data();
    T* result = out.values<T>().data();
    if (op == OpCode::Conv2d)
        forward(a, b, result, taps, columns);
    else if (op == OpCode::Conv2dInputGrad)
        inputGradient(a, b, result, taps, columns);
    else
        weightGradient(a, b, result, taps, columns);
}

} // namespace

Expected<core::Tensor> blasConvolution(OpCode op, const core::Tensor& first,
                                       const core::Tensor& second,
                                       const core::ops::Attributes& attrs) {
    if (op != OpCode::Conv2d && op != OpCode::Conv2dInputGrad && op != OpCode::Conv2dWeightGrad)
        return makeError(ErrorCode::InvalidInput, "a BLAS convolution is conv2d or its gradients");
    auto spec =
        core::ops::inferOutput(op,
                               std::vector<core::ops::TensorSpec>{{first.dtype(), first.shape()},
                                                                  {second.dtype(), second.shape()}},
                               attrs);
    if (!spec)
        return tl::unexpected(spec.error());
    if (spec->dtype != core::DType::F32 && spec->dtype != core::DType::F64)
        return makeError(ErrorCode::UnsupportedDtype, "a BLAS convolution is f32 or f64");
    auto params = core::ops::conv2dParams(attrs);
    if (!params)
        return tl::unexpected(params.error());
    auto out = core::Tensor::allocate(spec->dtype, spec->shape);
    if (!out || out->elementCount() == 0)
        return out;
    const core::Shape& input = op == OpCode::Conv2dInputGrad ? spec->shape : first.shape();
    const core::Shape& weight = op == OpCode::Conv2dWeightGrad ? spec->shape : second.shape();
    const core::Shape& output = op == OpCode::Conv2d            ? spec->shape
                                : op == OpCode::Conv2dInputGrad ? first.shape()
                                                                : second.shape();
    const Conv2dGeometry g = core::ops::conv2dGeometry(input, weight, output, params->groups);
    const Taps taps{g, *params};
    if (spec->dtype == core::DType::F32)
        convolve<float>(op, first, second, *out, taps);
    else
        convolve<double>(op, first, second, *out, taps);
    return out;
}

} // namespace goblin::compute
