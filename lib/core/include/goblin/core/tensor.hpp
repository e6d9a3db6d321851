// A dense tensor: dtype, shape and contiguous little-endian C-order bytes it owns.
// A Tensor is a value owned by one thread at a time; share it as shared_ptr<const Tensor>.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "goblin/core/dtype.hpp"
#include "goblin/core/error.hpp"

namespace goblin::core {

using Shape = std::vector<std::int64_t>;

inline constexpr std::size_t kMaxRank = 8;

// Element count of a shape, or an error on negative dimensions, rank > kMaxRank or overflow.
Expected<std::int64_t> elementCount(const Shape& shape);
// Bytes needed for dtype × shape, or an error as above.
Expected<std::size_t> byteSize(DType dtype, const Shape& shape);

class Tensor {
public:
    Tensor() = default;

    // Allocates uninitialised storage for dtype × shape.
    static Expected<Tensor> allocate(DType dtype, Shape shape);

    // The same elements under a shape of the same element count, sharing this tensor's storage
    // (no copy). Like every copy of a Tensor it aliases: write neither after sharing.
    Tensor withShape(Shape shape) const;

    DType dtype() const { return m_dtype; }
    const Shape& shape() const { return m_shape; }
    std::size_t byteSize() const { return m_byteSize; }
    std::int64_t elementCount() const {
        return m_byteSize == 0 ? 0 : static_cast<std::int64_t>(m_byteSize / itemSize(m_dtype));
    }

    std::span<std::byte> bytes() { return {m_storage.get(), m_byteSize}; }
    std::span<const std::byte> bytes() const { return {m_storage.get(), m_byteSize}; }

    template <class T> std::span<T> values() {
        assert(sizeof(T) == itemSize(m_dtype) && "values<T>() with a T that does not match dtype");
        return {reinterpret_cast<T*>(m_storage.get()), m_byteSize / sizeof(T)};
    }
    template <class T> std::span<const T> values() const {
        assert(sizeof(T) == itemSize(m_dtype) && "values<T>() with a T that does not match dtype");
        return {reinterpret_cast<const T*>(m_storage.get()), m_byteSize / sizeof(T)};
    }

private:
    DType m_dtype = DType::F32;
    Shape m_shape;
    std::size_t m_byteSize = 0;
    std::shared_ptr<std::byte[]> m_storage;
};

// A read-only row-major 2-D view into memory someone else owns (a tensor, a mapped file).
struct MatrixView {
    DType dtype = DType::F32;
    const std::byte* data = nullptr;
    std::int64_t rows = 0;
    std::int64_t cols = 0;
    std::int64_t rowStride = 0; // in elements

    template <class T> const T* row(std::int64_t i) const {
        return reinterpret_cast<const T*>(data) + i * rowStride;
    }
};

// A view of a whole 2-D tensor.
MatrixView viewOf(const Tensor& matrix);
// A view of rows [row0, row0+rows) and cols [col0, col0+cols) of a view.
MatrixView subView(const MatrixView& view, std::int64_t row0, std::int64_t rows, std::int64_t col0,
                   std::int64_t cols);
// Copies a view into a new contiguous tensor.
Expected<Tensor> copyToTensor(const MatrixView& view);
// Writes the view's rows one after another (rows × cols elements, no gaps) at `destination`.
void copyRows(const MatrixView& view, std::byte* destination);

// Batched matmul operands (rank ≥ 2, batch dims broadcast numpy-style): how many matrices an
// output of shape `out` holds, which matrix of an operand of shape `operand` its matrix `t` reads,
// and the view of matrix `index` of a tensor.
std::int64_t batchMatrixCount(const Shape& out);
std::int64_t broadcastMatrixIndex(const Shape& operand, const Shape& out, std::int64_t t);
MatrixView batchMatrix(const Tensor& tensor, std::int64_t index);

} // namespace goblin::core
