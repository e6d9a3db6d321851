// Reference kernels of max_pool2d, max_pool2d_indices and max_pool2d_backward (NCHW or CHW; every
// plane pooled on its own). The argmax of a window is its first maximum in row-major window order;
// a NaN beats every number and the first NaN wins. Indices are h·W + w within the plane.
#include <algorithm>
#include <cmath>
#include <vector>

#include "goblin/core/ops/op_geometry.hpp"
#include "kernels.hpp"

namespace goblin::reference::detail {
namespace {

using core::ops::Pool2dParams;

struct PoolGeometry {
    std::int64_t planes, h, w, oh, ow;
};

PoolGeometry geometryOf(const Shape& input, const Shape& output) {
    const std::size_t rank = input.size();
    std::int64_t planes = 1;
    for (std::size_t d = 0; d + 2 < rank; ++d)
        planes *= input[d];
    return {planes, input[rank - 2], input[rank - 1], output[rank - 2], output[rank - 1]};
}

// The taps of a window along one axis that fall inside the input: the first one's input position
// and how many there are (positions first, first + dilation, …). Worked out once per output
// row and column, so the argmax loop below has no bounds test.
struct TapsInside {
    std::int64_t first = 0, count = 0;
};

TapsInside tapsInside(std::int64_t out, std::int64_t kernel, std::int64_t stride,
                      std::int64_t padding, std::int64_t dilation, std::int64_t size) {
    const std::int64_t start = out * stride - padding;
    if (start >= size)
        return {};
    const std::int64_t begin = start < 0 ? (-start + dilation - 1) / dilation : 0;
    const std::int64_t end = std::min(kernel, (size - 1 - start) / dilation + 1);
    if (end <= begin)
        return {};
    return {start + begin * dilation, end - begin};
}

// The in-plane index of the window's maximum, or −1 for a window with no element inside the input
// (only possible with dilation; its value is −inf). Taps in row-major window order:
// a later tap wins only when greater, and the first NaN wins outright. The comparison is
// branch-free (random values mispredict a branch every other tap); a window with a NaN, rare, is
// looked at again for its first one.
template <class T>
std::int64_t windowArgmax(const T* plane, std::int64_t width, TapsInside rows, TapsInside cols,
                          const Pool2dParams& p) {
    if (rows.count == 0 || cols.count == 0)
        return -1;
    std::int64_t best = rows.first * width + cols.first;
    T bestValue = plane[best];
    bool nan = false;
    for (std::int64_t ky = 0, iy = rows.first; ky < rows.count; ++ky, iy += p.dilation[0])
        for (std::int64_t kx = 0, ix = cols.first; kx < cols.count; ++kx, ix += p.dilation[1]) {
            const std::int64_t index = iy * width + ix;
            const T value = plane[index];
            const bool greater = value > bestValue;
            best = greater ? index : best;
            bestValue = greater ? value : bestValue;
            nan |= std::isnan(value);
        }
    if (!nan)
        return best;
    for (std::int64_t ky = 0, iy = rows.first; ky < rows.count; ++ky, iy += p.dilation[0])
        for (std::int64_t kx = 0, ix = cols.first; kx < cols.count; ++kx, ix += p.dilation[1])
            if (std::isnan(plane[iy * width + ix]))
                return iy * width + ix;
    return best; // not reached
}

template <class T> void pool(OpCode op, Args args, const Pool2dParams& p, Tensor& out) {
    const Tensor& x = args.back();
    const PoolGeometry g =
        geometryOf(x.shape(), op == OpCode::MaxPool2dBackward ? args[0].shape() : out.shape());
    const T* input = x.values<T>().data();
    const T* gradOut = op == OpCode::MaxPool2dBackward ? args[0].values<T>().data() : nullptr;
    T* values = op == OpCode::MaxPool2dIndices ? nullptr : out.values<T>().data();
    std::int64_t* indices =
        op == OpCode::MaxPool2dIndices ? out.values<std::int64_t>().data() : nullptr;
    if (op == OpCode::MaxPool2dBackward)
        std::fill_n(values, out.elementCount(), T{0});
    std::vector<TapsInside> cols(static_cast<std::size_t>(g.ow));
    for (std::int64_t ox = 0; ox < g.ow; ++ox)
        cols[static_cast<std::size_t>(ox)] =
            tapsInside(ox, p.kernel[1], p.stride[1], p.padding[1], p.dilation[1], g.w);
    for (std::int64_t plane = 0; plane < g.planes; ++plane) {
        const T* source = input + plane * g.h * g.w;
        for (std::int64_t oy = 0; oy < g.oh; ++oy) {
            const TapsInside rows =
                tapsInside(oy, p.kernel[0], p.stride[0], p.padding[0], p.dilation[0], g.h);
            for (std::int64_t ox = 0; ox < g.ow; ++ox) {
                const std::int64_t best =
                    windowArgmax(source, g.w, rows, cols[static_cast<std::size_t>(ox)], p);
                const std::int64_t at = (plane * g.oh + oy) * g.ow + ox;
                if (op == OpCode::MaxPool2d)
                    values[at] = best < 0 ? -INFINITY : source[best];
                else if (op == OpCode::MaxPool2dIndices)
                    indices[at] = best;
                else if (best >= 0)
                    values[plane * g.h * g.w + best] += gradOut[at];
            }
        }
    }
}

} // namespace

Expected<Tensor> runPoolOp(OpCode op, Args args, const Attributes& attrs, const TensorSpec& spec) {
    auto out = Tensor::allocate(spec.dtype, spec.shape);
    if (!out)
        return out;
    const Pool2dParams params = core::ops::pool2dParams(attrs).value();
    visitDType(args.back().dtype(), [&](auto t) {
        using T = decltype(t);
        if constexpr (std::is_floating_point_v<T>)
            pool<T>(op, args, params, *out);
    });
    return out;
}

} // namespace goblin::reference::detail
