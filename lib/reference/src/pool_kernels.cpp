// Reference kernels of max_pool2d, max_pool2d_indices and max_pool2d_backward (NCHW or CHW; every
// plane pooled on its own). The argmax of a window is its first maximum in row-major window order;
// a NaN beats every number and the first NaN wins. Indices are h·W + w within the plane.
#include <cmath>

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

// The in-plane index of the window's maximum, or −1 for a window with no element inside the input
// (only possible with dilation; its value is −inf).
template <class T>
std::int64_t windowArgmax(const T* plane, const PoolGeometry& g, const Pool2dParams& p,
                          std::int64_t oy, std::int64_t ox) {
    std::int64_t best = -1;
    for (std::int64_t ky = 0; ky < p.kernel[0]; ++ky) {
        const std::int64_t iy = oy * p.stride[0] - p.padding[0] + ky * p.dilation[0];
        if (iy < 0 || iy >= g.h)
            continue;
        for (std::int64_t kx = 0; kx < p.kernel[1]; ++kx) {
            const std::int64_t ix = ox * p.stride[1] - p.padding[1] + kx * p.dilation[1];
            if (ix < 0 || ix >= g.w)
                continue;
            const std::int64_t index = iy * g.w + ix;
            if (best < 0) {
                best = index;
                continue;
            }
            if (std::isnan(plane[best]))
                return best;
            if (std::isnan(plane[index]) || plane[index] > plane[best])
                best = index;
        }
    }
    return best;
}

template <class T> void pool(OpCode op, Args args, const Pool2dParams& p, Tensor& out) {
    const Tensor& x = args.back();
    const PoolGeometry g =
        geometryOf(x.shape(), op == OpCode::MaxPool2dBackward ? args[0].shape() : out.shape());
    const T* input = x.values<T>().data();
    const T* gradOut = op == OpCode::MaxPool2dBackward ? args[0].values<T>().data() : nullptr;
    if (op == OpCode::MaxPool2dBackward)
        for (T& value : out.values<T>())
            value = 0;
    for (std::int64_t plane = 0; plane < g.planes; ++plane) {
        const T* source = input + plane * g.h * g.w;
        for (std::int64_t oy = 0; oy < g.oh; ++oy)
            for (std::int64_t ox = 0; ox < g.ow; ++ox) {
                const std::int64_t best = windowArgmax(source, g, p, oy, ox);
                const std::int64_t at = (plane * g.oh + oy) * g.ow + ox;
                if (op == OpCode::MaxPool2d)
                    out.values<T>()[static_cast<std::size_t>(at)] =
                        best < 0 ? -INFINITY : source[best];
                else if (op == OpCode::MaxPool2dIndices)
                    out.values<std::int64_t>()[static_cast<std::size_t>(at)] = best;
                else if (best >= 0) {
                    T& target = out.values<T>()[static_cast<std::size_t>(plane * g.h * g.w + best)];
                    target = target + gradOut[at];
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
