// Broadcast and reduction index tables for the reference kernels (and, through
// goblin/reference/index_tables.hpp, for the OpenCL launches that read the same tables).
#include <algorithm>

#include "kernels.hpp"

namespace goblin::reference::detail {

std::vector<std::int64_t> stridesOf(const Shape& shape) {
    std::vector<std::int64_t> strides(shape.size(), 1);
    for (std::size_t i = shape.size(); i-- > 1;)
        strides[i - 1] = strides[i] * shape[i];
    return strides;
}

std::int64_t indexAt(const Tensor& index, std::size_t i) {
    if (index.dtype() == core::DType::I32)
        return index.values<std::int32_t>()[i];
    return index.values<std::int64_t>()[i];
}

DimSplit splitAt(const Shape& shape, std::size_t dim) {
    DimSplit split;
    for (std::size_t d = 0; d < shape.size(); ++d) {
        if (d < dim)
            split.outer *= shape[d];
        else if (d > dim)
            split.inner *= shape[d];
    }
    split.size = shape.empty() ? 1 : shape[dim];
    return split;
}

std::vector<std::int64_t> offsetsAlong(const Shape& shape, const std::vector<std::int64_t>& strides,
                                       const std::vector<std::size_t>& dims) {
    std::vector<std::int64_t> offsets{0};
    for (std::size_t dim : dims) {
        std::vector<std::int64_t> next;
        next.reserve(offsets.size() * static_cast<std::size_t>(shape[dim]));
        for (std::int64_t offset : offsets)
            for (std::int64_t i = 0; i < shape[dim]; ++i)
                next.push_back(offset + i * strides[dim]);
        offsets = std::move(next);
    }
    return offsets;
}

RowWalk broadcastWalk(const Shape& in, const Shape& out) {
    RowWalk walk;
    walk.width = out.empty() ? 1 : out.back();
    const Shape outRows(out.begin(), out.end() - (out.empty() ? 0 : 1));
    if (in.empty()) { // a scalar: every element reads offset 0
        walk.rowStarts.assign(static_cast<std::size_t>(core::elementCount(outRows).value_or(1)), 0);
        return walk;
    }
    const std::int64_t inWidth = in.back();
    walk.step = inWidth == 1 ? 0 : 1;
    walk.rowStarts = broadcastOffsets(Shape(in.begin(), in.end() - 1), outRows);
    for (std::int64_t& start : walk.rowStarts)
        start *= inWidth;
    return walk;
}

} // namespace goblin::reference::detail

namespace goblin::reference {

using core::Shape;
using detail::offsetsAlong;
using detail::stridesOf;

std::vector<std::int64_t> broadcastOffsets(const Shape& in, const Shape& out) {
    const std::vector<std::int64_t> inStrides = stridesOf(in);
    // Strides of `in` seen through `out`'s dims: 0 where `in` broadcasts or has no dim.
    std::vector<std::int64_t> strides(out.size(), 0);
    const std::size_t offset = out.size() - in.size();
    for (std::size_t i = 0; i < in.size(); ++i)
        strides[offset + i] = in[i] == 1 ? 0 : inStrides[i];
    std::vector<std::size_t> all(out.size());
    for (std::size_t i = 0; i < all.size(); ++i)
        all[i] = i;
    return offsetsAlong(out, strides, all);
}

ReductionIndex reductionIndex(const Shape& shape, std::span<const std::int64_t> dims) {
    const std::vector<std::int64_t> strides = stridesOf(shape);
    std::vector<std::size_t> kept;
    std::vector<std::size_t> reduced;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        const bool isReduced =
            std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(i)) != dims.end();
        (isReduced ? reduced : kept).push_back(i);
    }
    return {offsetsAlong(shape, strides, kept), offsetsAlong(shape, strides, reduced)};
}

} // namespace goblin::reference
