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
using core::ops::OpCode;

using Taps = core::ops::Conv2dTaps;

// Visits the im2col matrix of image b's group channels for output positions [first, last)
// (position = oy·ow + ox): K = (ch, ky, kx) rows × (last − first) columns in row-major order,
// with the input index each entry reads (−1 in the padding).
template <class Visit>
void walkTaps(const Taps& g, std::int64_t b, std::int64_t group, std::int64_t first,
              std::int64_t last, Visit&& visit) {
    std::int64_t entry = 0;
    for (std::int64_t ch = 0; ch < g.ci; ++ch)
        for (std::int64_t ky = 0; ky < g.kh; ++ky)
            for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                std::int64_t oy = first / g.ow, ox = first % g.ow;
                for (std::int64_t at = first; at < last; ++at, ++entry) {
                    const std::int64_t iy = g.inputRow(oy, ky), ix = g.inputColumn(ox, kx);
                    visit(entry, g.inside(iy, ix) ? g.x(b, group * g.ci + ch, iy, ix) : -1);
                    if (++ox == g.ow) {
                        ox = 0;
                        ++oy;
                    }
                }
            }
}

// At most this many im2col entries are built at once: a convolution walks its output positions
// in slabs this wide ÷ K, so its workspace stays bounded whatever the image size.
constexpr std::int64_t kMaxColumnEntries = std::int64_t{1} << 18;

template <class T> using ConstMatrix = Eigen::Map<const RowMajorMatrix<T>>;
// A block of columns of a row-major matrix whose rows are `stride` apart.
template <class T> using Columns = Eigen::Map<RowMajorMatrix<T>, 0, Eigen::OuterStride<>>;
template <class T>
using ConstColumns = Eigen::Map<const RowMajorMatrix<T>, 0, Eigen::OuterStride<>>;

// Calls visit(b, group, first, width) for each image, group and slab of at most `slab` output
// positions [first, first + width), in that order.
template <class Visit> void forEachSlab(const Conv2dGeometry& g, std::int64_t slab, Visit&& visit) {
    const std::int64_t m = g.oh * g.ow;
    for (std::int64_t b = 0; b < g.n; ++b)
        for (std::int64_t group = 0; group < g.groups; ++group)
            for (std::int64_t first = 0; first < m; first += slab)
                visit(b, group, first, std::min(slab, m - first));
}

// The im2col of image b's group channels for output positions [first, first + width): K × width.
template <class T>
void gatherColumns(const T* x, const Taps& taps, std::int64_t b, std::int64_t group,
                   std::int64_t first, std::int64_t width, std::vector<T>& columns) {
    walkTaps(taps, b, group, first, first + width, [&](std::int64_t entry, std::int64_t at) {
        columns[static_cast<std::size_t>(entry)] = at < 0 ? T(0) : x[at];
    });
}

// y_g's columns (O/groups × width) = w_g (O/groups × K) · columns (K × width).
template <class T>
void forward(const T* x, const T* w, T* y, const Taps& taps, std::vector<T>& columns,
             std::int64_t slab) {
    const Taps& g = taps;
    const Eigen::Index k = g.ci * g.kh * g.kw, m = g.oh * g.ow, og = g.outPerGroup();
    forEachSlab(
        g, slab, [&](std::int64_t b, std::int64_t group, std::int64_t first, std::int64_t width) {
            gatherColumns(x, taps, b, group, first, width, columns);
            Columns<T>(y + g.out(b, group * og, 0, 0) + first, og, width, Eigen::OuterStride<>(m))
                .noalias() = ConstMatrix<T>(w + group * og * k, og, k) *
                             ConstMatrix<T>(columns.data(), k, width);
        });
}

// columns (K × width) = w_gᵀ · grad_out_g's columns, then each entry added to the input element
// it read.
template <class T>
void inputGradient(const T* gy, const T* w, T* gx, const Taps& taps, std::vector<T>& columns,
                   std::int64_t slab) {
    const Taps& g = taps;
    const Eigen::Index k = g.ci * g.kh * g.kw, m = g.oh * g.ow, og = g.outPerGroup();
    std::fill(gx, gx + g.n * g.c * g.h * g.w, T(0));
    forEachSlab(g, slab,
                [&](std::int64_t b, std::int64_t group, std::int64_t first, std::int64_t width) {
                    Eigen::Map<RowMajorMatrix<T>>(columns.data(), k, width).noalias() =
                        ConstMatrix<T>(w + group * og * k, og, k).transpose() *
                        ConstColumns<T>(gy + g.out(b, group * og, 0, 0) + first, og, width,
                                        Eigen::OuterStride<>(m));
                    walkTaps(taps, b, group, first, first + width,
                             [&](std::int64_t entry, std::int64_t at) {
                                 if (at >= 0)
                                     gx[at] += columns[static_cast<std::size_t>(entry)];
                             });
                });
}

// grad_w_g (O/groups × K) = Σ over images and slabs of grad_out_g's columns (O/groups × width) ·
// columnsᵀ (width × K).
template <class T>
void weightGradient(const T* x, const T* gy, T* gw, const Taps& taps, std::vector<T>& columns,
                    std::int64_t slab) {
    const Taps& g = taps;
    const Eigen::Index k = g.ci * g.kh * g.kw, m = g.oh * g.ow, og = g.outPerGroup();
    std::fill(gw, gw + g.o * k, T(0));
    forEachSlab(g, slab,
                [&](std::int64_t b, std::int64_t group, std::int64_t first, std::int64_t width) {
                    gatherColumns(x, taps, b, group, first, width, columns);
                    Eigen::Map<RowMajorMatrix<T>>(gw + group * og * k, og, k).noalias() +=
                        ConstColumns<T>(gy + g.out(b, group * og, 0, 0) + first, og, width,
                                        Eigen::OuterStride<>(m)) *
                        ConstMatrix<T>(columns.data(), k, width).transpose();
                });
}

template <class T>
void convolve(OpCode op, const core::Tensor& first, const core::Tensor& second, core::Tensor& out,
              const Taps& taps) {
    const Taps& g = taps;
    const std::int64_t k = g.ci * g.kh * g.kw, m = g.oh * g.ow;
    // Output positions per slab: as many as kMaxColumnEntries allows, at least one.
    const std::int64_t slab = std::clamp<std::int64_t>(
        kMaxColumnEntries / std::max<std::int64_t>(k, 1), 1, std::max<std::int64_t>(m, 1));
    std::vector<T> columns(static_cast<std::size_t>(k * slab));
    const T* a = first.values<T>().data();
    const T* b = second.values<T>().data();
    T* result = out.values<T>().data();
    if (op == OpCode::Conv2d)
        forward(a, b, result, taps, columns, slab);
    else if (op == OpCode::Conv2dInputGrad)
        inputGradient(a, b, result, taps, columns, slab);
    else
        weightGradient(a, b, result, taps, columns, slab);
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
    const Taps taps = core::ops::conv2dTaps(input, weight, output, *params);
    if (spec->dtype == core::DType::F32)
        convolve<float>(op, first, second, *out, taps);
    else
        convolve<double>(op, first, second, *out, taps);
    return out;
}

} // namespace goblin::compute
