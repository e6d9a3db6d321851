#include "goblin/plan/tensor_slices.hpp"

#include <cstring>
#include <string>

namespace goblin::plan {
namespace {

struct Layout {
    std::int64_t outer = 1;   // product of the dims before `dim`
    std::size_t rowBytes = 0; // bytes of one index along `dim` (the dims after it)
};

Layout layoutOf(const core::Shape& shape, int dim, core::DType dtype) {
    Layout layout;
    std::int64_t inner = 1;
    for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
        if (d < dim)
            layout.outer *= shape[d];
        else if (d > dim)
            inner *= shape[d];
    }
    layout.rowBytes = static_cast<std::size_t>(inner) * core::itemSize(dtype);
    return layout;
}

} // namespace

Expected<core::Tensor> sliceAlong(const core::Tensor& tensor, int dim, std::int64_t offset,
                                  std::int64_t count) {
    const core::Shape& shape = tensor.shape();
    if (dim < 0 || dim >= static_cast<int>(shape.size()) || offset < 0 || count < 0 ||
        offset + count > shape[dim])
        return makeError(ErrorCode::ShapeMismatch, "slice outside the tensor");
    core::Shape partShape = shape;
    partShape[dim] = count;
    auto part = core::Tensor::allocate(tensor.dtype(), partShape);
    if (!part)
        return part;
    const Layout layout = layoutOf(shape, dim, tensor.dtype());
    const std::size_t chunk = layout.rowBytes * static_cast<std::size_t>(count);
    if (chunk == 0)
        return part;
    for (std::int64_t o = 0; o < layout.outer; ++o) {
        const std::byte* from =
            tensor.bytes().data() +
            (static_cast<std::size_t>(o * shape[dim] + offset)) * layout.rowBytes;
        std::memcpy(part->bytes().data() + static_cast<std::size_t>(o) * chunk, from, chunk);
    }
    return part;
}

Expected<void> placeAlong(core::Tensor& whole, const core::Tensor& part, int dim,
                          std::int64_t offset) {
    const core::Shape& shape = whole.shape();
    const core::Shape& partShape = part.shape();
    bool fits = part.dtype() == whole.dtype() && partShape.size() == shape.size() && dim >= 0 &&
                dim < static_cast<int>(shape.size());
    for (int d = 0; fits && d < static_cast<int>(shape.size()); ++d)
        fits =
            d == dim ? offset >= 0 && offset + partShape[d] <= shape[d] : partShape[d] == shape[d];
    if (!fits)
        return makeError(ErrorCode::ShapeMismatch, "a part does not fit its place in the whole");
    const Layout layout = layoutOf(shape, dim, whole.dtype());
    const std::size_t chunk = layout.rowBytes * static_cast<std::size_t>(partShape[dim]);
    if (chunk == 0)
        return {};
    for (std::int64_t o = 0; o < layout.outer; ++o) {
        std::byte* to = whole.bytes().data() +
                        static_cast<std::size_t>(o * shape[dim] + offset) * layout.rowBytes;
        std::memcpy(to, part.bytes().data() + static_cast<std::size_t>(o) * chunk, chunk);
    }
    return {};
}

} // namespace goblin::plan
