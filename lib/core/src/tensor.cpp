#include "goblin/core/tensor.hpp"

#include "goblin/core/bulk_memory.hpp"

#include <cstring>
#include <limits>
#include <new>
#include <string>

namespace goblin::core {
namespace {

// Element storage is at least 64-byte aligned so values<double>() is well aligned and SIMD loads
// are cheap (make_shared<std::byte[]> only promises the alignment of std::byte); large storage is
// bulk memory, backed by huge pages where the system has them.
std::shared_ptr<std::byte[]> allocateStorage(std::size_t bytes) {
    void* memory = allocateBulk(bytes);
    return std::shared_ptr<std::byte[]>(static_cast<std::byte*>(memory),
                                        [bytes](std::byte* pointer) { freeBulk(pointer, bytes); });
}

} // namespace

Expected<std::int64_t> elementCount(const Shape& shape) {
    if (shape.size() > kMaxRank)
        return makeError(ErrorCode::LimitExceeded,
                         "rank " + std::to_string(shape.size()) + " is over the limit of 8");
    std::int64_t count = 1;
    for (std::int64_t dim : shape) {
        if (dim < 0)
            return makeError(ErrorCode::ShapeMismatch, "negative dimension in shape");
        if (dim != 0 && count > std::numeric_limits<std::int64_t>::max() / dim)
            return makeError(ErrorCode::LimitExceeded, "shape element count overflows");
        count *= dim;
    }
    return count;
}

Expected<std::size_t> byteSize(DType dtype, const Shape& shape) {
    auto count = elementCount(shape);
    if (!count)
        return tl::unexpected(count.error());
    const auto item = static_cast<std::int64_t>(itemSize(dtype));
    if (*count > std::numeric_limits<std::int64_t>::max() / item)
        return makeError(ErrorCode::LimitExceeded, "tensor byte size overflows");
    return static_cast<std::size_t>(*count * item);
}

Expected<Tensor> Tensor::allocate(DType dtype, Shape shape) {
    auto size = core::byteSize(dtype, shape);
    if (!size)
        return tl::unexpected(size.error());
    Tensor tensor;
    tensor.m_dtype = dtype;
    tensor.m_shape = std::move(shape);
    tensor.m_byteSize = *size;
    tensor.m_storage = allocateStorage(*size);
    return tensor;
}

Tensor Tensor::withShape(Shape shape) const {
    assert(core::elementCount(shape).value_or(-1) == elementCount() || m_byteSize == 0);
    Tensor tensor = *this;
    tensor.m_shape = std::move(shape);
    return tensor;
}

MatrixView viewOf(const Tensor& matrix) {
    assert(matrix.shape().size() == 2 && "viewOf() needs a 2-D tensor");
    return MatrixView{matrix.dtype(), matrix.bytes().data(), matrix.shape()[0], matrix.shape()[1],
                      matrix.shape()[1]};
}

MatrixView subView(const MatrixView& view, std::int64_t row0, std::int64_t rows, std::int64_t col0,
                   std::int64_t cols) {
    assert(row0 >= 0 && rows >= 0 && row0 + rows <= view.rows && "subView rows out of range");
    assert(col0 >= 0 && cols >= 0 && col0 + cols <= view.cols && "subView cols out of range");
    const auto item = static_cast<std::int64_t>(itemSize(view.dtype));
    return MatrixView{view.dtype, view.data + (row0 * view.rowStride + col0) * item, rows, cols,
                      view.rowStride};
}

Expected<Tensor> copyToTensor(const MatrixView& view) {
    auto tensor = Tensor::allocate(view.dtype, {view.rows, view.cols});
    if (tensor)
        copyRows(view, tensor->bytes().data());
    return tensor;
}

void copyRows(const MatrixView& view, std::byte* destination) {
    const auto item = static_cast<std::int64_t>(itemSize(view.dtype));
    const auto rowBytes = static_cast<std::size_t>(view.cols * item);
    if (rowBytes == 0)
        return;
    assert(view.rowStride >= view.cols && "copyRows() with a rowStride shorter than a row");
    for (std::int64_t i = 0; i < view.rows; ++i)
        std::memcpy(destination + static_cast<std::size_t>(i) * rowBytes,
                    view.data + i * view.rowStride * item, rowBytes);
}

std::int64_t batchMatrixCount(const Shape& out) {
    std::int64_t matrices = 1;
    for (std::size_t d = 0; d + 2 < out.size(); ++d)
        matrices *= out[d];
    return matrices;
}

std::int64_t broadcastMatrixIndex(const Shape& operand, const Shape& out, std::int64_t t) {
    const std::size_t outBatch = out.size() - 2, batch = operand.size() - 2;
    std::int64_t index = 0, stride = 1;
    for (std::size_t fromEnd = 0; fromEnd < outBatch; ++fromEnd) { // from the last batch dim
        const std::int64_t outDim = out[outBatch - 1 - fromEnd];
        const std::int64_t position = t % outDim;
        t /= outDim;
        if (fromEnd >= batch)
            continue;
        const std::int64_t dim = operand[batch - 1 - fromEnd];
        index += (dim == 1 ? 0 : position) * stride;
        stride *= dim;
    }
    return index;
}

MatrixView batchMatrix(const Tensor& tensor, std::int64_t index) {
    const Shape& shape = tensor.shape();
    const std::int64_t rows = shape[shape.size() - 2], cols = shape.back();
    const auto offset = static_cast<std::size_t>(index * rows * cols) * itemSize(tensor.dtype());
    return MatrixView{tensor.dtype(), tensor.bytes().data() + offset, rows, cols, cols};
}

} // namespace goblin::core
