// Broadcasting, dim normalisation and shape text shared by the inference families.
#include <algorithm>
#include <string>

#include "infer.hpp"

namespace goblin::core::ops {

Expected<Shape> broadcastShapes(const Shape& a, const Shape& b) {
    const std::size_t rank = std::max(a.size(), b.size());
    Shape out(rank, 1);
    for (std::size_t i = 0; i < rank; ++i) {
        // Align from the right, as NumPy does.
        const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
        const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
        if (da != db && da != 1 && db != 1)
            return makeError(ErrorCode::ShapeMismatch, "shapes " + detail::describe(a) + " and " +
                                                           detail::describe(b) +
                                                           " do not broadcast");
        out[i] = da == 1 ? db : da;
    }
    return out;
}

namespace detail {

Expected<std::int64_t> normaliseDim(std::int64_t dim, std::size_t rank) {
    const auto r = static_cast<std::int64_t>(rank);
    // A scalar accepts dim 0 and -1, as in PyTorch.
    const std::int64_t bound = std::max<std::int64_t>(r, 1);
    if (dim < -bound || dim >= bound)
        return makeError(ErrorCode::InvalidInput, "dim " + std::to_string(dim) +
                                                      " is out of range for rank " +
                                                      std::to_string(r));
    return dim < 0 ? dim + bound : dim;
}

tl::unexpected<Error> invalid(std::string message) {
    return makeError(ErrorCode::InvalidInput, std::move(message));
}

tl::unexpected<Error> mismatch(std::string message) {
    return makeError(ErrorCode::ShapeMismatch, std::move(message));
}

bool isIndexDType(DType dtype) {
    return dtype == DType::I32 || dtype == DType::I64;
}

Expected<TensorSpec> checkedSpec(DType dtype, Shape shape) {
    if (auto count = elementCount(shape); !count)
        return failureOf(count);
    return TensorSpec{dtype, std::move(shape)};
}

std::string describe(const Shape& shape) {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
        text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

} // namespace detail
} // namespace goblin::core::ops
