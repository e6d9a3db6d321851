#include "matmul_validation.hpp"

#include <algorithm>
#include <climits>

namespace goblin::compute {

std::string shapeText(const core::Shape& shape) {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
        text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
    return text + "]";
}

Expected<void> validateMatmul(const core::Tensor& a, const core::Tensor& b) {
    if (a.shape().size() != 2 || b.shape().size() != 2)
        return makeError(ErrorCode::ShapeMismatch, "matmul needs 2-D tensors, got " +
                                                       shapeText(a.shape()) + " and " +
                                                       shapeText(b.shape()));
    if (a.dtype() != b.dtype())
        return makeError(ErrorCode::UnsupportedDtype,
                         "matmul needs one dtype, got " + std::string(core::wireName(a.dtype())) +
                             " and " + std::string(core::wireName(b.dtype())));
    if (!core::isFloatingPoint(a.dtype()))
        return makeError(ErrorCode::UnsupportedDtype,
                         "matmul takes f32 or f64, not " + std::string(core::wireName(a.dtype())));
    if (a.shape()[1] != b.shape()[0])
        return makeError(ErrorCode::ShapeMismatch,
                         "matmul inner sizes differ: " + shapeText(a.shape()) + " · " +
                             shapeText(b.shape()));
    // BLAS takes 32-bit dimensions.
    const bool fitsBlas = std::all_of(a.shape().begin(), a.shape().end(),
                                      [](std::int64_t dim) { return dim <= INT_MAX; }) &&
                          b.shape()[1] <= INT_MAX;
    if (!fitsBlas)
        return makeError(ErrorCode::LimitExceeded, "matmul dimensions over 2^31 - 1");
    return {};
}

} // namespace goblin::compute
