// First: Eigen must see EIGEN_USE_BLAS before any of its headers.
#include "eigen_blas.hpp"

#include "goblin/compute/blas_conv.hpp"

#include <algorithm>
#include <vector>

#include "goblin/core/ops/op_catalog.hpp"
#include "goblin/core/ops/op_geometry.hpp"

namespace goblin::compute {
namespace {

// y[n, group's channels] = w_g (O/groups × K) · columns (K × OH·OW), columns the im2col of image
// n's group channels: rows (ch, ky, kx), columns (oy, ox), 0 where a tap falls in the padding.
template <class T>
void convolve(const core::Tensor& xt, const core::Tensor& wt, core::Tensor& yt,
              const core::ops::Conv2dGeometry& g, const core::ops::Conv2dParams& p) {
    const T* x = xt.values<T>().data();
    const T* w = wt.values<T>().data();
    T* y = yt.values<T>().data();
    const Eigen::Index k = g.ci * g.kh * g.kw, m = g.oh * g.ow, og = g.outPerGroup();
    std::vector<T> columns(static_cast<std::size_t>(k * m));
    for (std::int64_t b = 0; b < g.n; ++b)
        for (std::int64_t group = 0; group < g.groups; ++group) {
            T* row = columns.data();
            for (std::int64_t ch = 0; ch < g.ci; ++ch)
                for (std::int64_t ky = 0; ky < g.kh; ++ky)
                    for (std::int64_t kx = 0; kx < g.kw; ++kx)
                        for (std::int64_t oy = 0; oy < g.oh; ++oy) {
                            const std::int64_t iy =
                                oy * p.stride[0] - p.padding[0] + ky * p.dilation[0];
                            for (std::int64_t ox = 0; ox < g.ow; ++ox) {
                                const std::int64_t ix =
                                    ox * p.stride[1] - p.padding[1] + kx * p.dilation[1];
                                const bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
                                *row++ = inside ? x[g.x(b, group * g.ci + ch, iy, ix)] : T(0);
                            }
                        }
            const Eigen::Map<const RowMajorMatrix<T>> weights(w + group * og * k, og, k);
            const Eigen::Map<const RowMajorMatrix<T>> taps(columns.data(), k, m);
            Eigen::Map<RowMajorMatrix<T>> out(y + g.out(b, group * og, 0, 0), og, m);
            out.noalias() = weights * taps;
        }
}

} // namespace

Expected<core::Tensor> blasConv2d(const core::Tensor& x, const core::Tensor& w,
                                  const core::ops::Attributes& attrs) {
    auto spec = core::ops::inferOutput(
        core::ops::OpCode::Conv2d,
        std::vector<core::ops::TensorSpec>{{x.dtype(), x.shape()}, {w.dtype(), w.shape()}}, attrs);
    if (!spec)
        return tl::unexpected(spec.error());
    if (spec->dtype != core::DType::F32 && spec->dtype != core::DType::F64)
        return makeError(ErrorCode::UnsupportedDtype, "a BLAS convolution is f32 or f64");
    auto params = core::ops::conv2dParams(attrs);
    if (!params)
        return tl::unexpected(params.error());
    auto y = core::Tensor::allocate(spec->dtype, spec->shape);
    if (!y || y->elementCount() == 0)
        return y;
    const auto g = core::ops::conv2dGeometry(x.shape(), w.shape(), spec->shape, params->groups);
    if (g.ci * g.kh * g.kw == 0) {
        std::fill(y->bytes().begin(), y->bytes().end(), std::byte{0});
        return y;
    }
    if (spec->dtype == core::DType::F32)
        convolve<float>(x, w, *y, g, *params);
    else
        convolve<double>(x, w, *y, g, *params);
    return y;
}

} // namespace goblin::compute
