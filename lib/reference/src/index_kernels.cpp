// Reference kernels of gather, index_select, embedding, one_hot and index_add. Every index is
// checked before anything is written: an index outside [0, size) is an invalid_input error
// (PyTorch raises; negative indices are not wrapped).
#include <cstring>
#include <string>
#include <type_traits>

#include "kernels.hpp"

namespace goblin::reference::detail {
namespace {

template <class T> constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// acc + alpha·value with two's-complement wrapping, computed in the unsigned type (no UB).
template <class T> T wrapMultiplyAdd(T acc, T alpha, T value) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(
        static_cast<U>(acc) + static_cast<U>(static_cast<U>(alpha) * static_cast<U>(value))));
}

std::size_t dimAttr(const Attributes& attrs, std::size_t rank) {
    const std::int64_t dim = core::ops::attrInt(attrs, "dim", 0).value_or(0);
    const auto bound = static_cast<std::int64_t>(rank == 0 ? 1 : rank);
    return static_cast<std::size_t>(dim < 0 ? dim + bound : dim);
}

Expected<void> checkIndices(const Tensor& index, std::int64_t size, const char* op) {
    for (std::size_t i = 0; i < static_cast<std::size_t>(index.elementCount()); ++i) {
        const std::int64_t value = indexAt(index, i);
        if (value < 0 || value >= size)
            return makeError(ErrorCode::InvalidInput,
                             std::string(op) + ": index " + std::to_string(value) +
                                 " is out of range for a dim of size " + std::to_string(size));
    }
    return {};
}

void copyElements(const Tensor& from, std::int64_t fromOffset, Tensor& to, std::int64_t toOffset,
                  std::int64_t count) {
    const std::size_t size = core::itemSize(from.dtype());
    if (count > 0)
        std::memcpy(to.bytes().data() + static_cast<std::size_t>(toOffset) * size,
                    from.bytes().data() + static_cast<std::size_t>(fromOffset) * size,
                    static_cast<std::size_t>(count) * size);
}

// out[i] = x[i with its `dim` coordinate replaced by index[i]].
Expected<void> gather(const Tensor& x, const Tensor& index, std::size_t dim, Tensor& out) {
    const Shape& shape = index.shape();
    const std::int64_t size = x.shape().empty() ? 1 : x.shape()[dim];
    if (auto checked = checkIndices(index, size, "gather"); !checked)
        return checked;
    const auto xStrides = stridesOf(x.shape());
    const auto count = static_cast<std::size_t>(index.elementCount());
    for (std::size_t i = 0; i < count; ++i) {
        std::int64_t rest = static_cast<std::int64_t>(i), offset = 0;
        for (std::size_t d = shape.size(); d-- > 0;) {
            const std::int64_t coordinate = rest % shape[d];
            rest /= shape[d];
            offset += (d == dim ? indexAt(index, i) : coordinate) * xStrides[d];
        }
        copyElements(x, offset, out, static_cast<std::int64_t>(i), 1);
    }
    return {};
}

// out[o, j, :] = x[o, index[j], :] (embedding: dim 0 of the weight, indices flattened).
Expected<void> indexSelect(const Tensor& x, const Tensor& index, std::size_t dim, Tensor& out,
                           const char* op) {
    const DimSplit split = splitAt(x.shape(), dim);
    if (auto checked = checkIndices(index, split.size, op); !checked)
        return checked;
    const std::int64_t count = index.elementCount();
    for (std::int64_t o = 0; o < split.outer; ++o)
        for (std::int64_t j = 0; j < count; ++j)
            copyElements(
                x, (o * split.size + indexAt(index, static_cast<std::size_t>(j))) * split.inner,
                out, (o * count + j) * split.inner, split.inner);
    return {};
}

Expected<void> oneHot(const Tensor& x, Tensor& out) {
    const std::int64_t classes = out.shape().back();
    if (auto checked = checkIndices(x, classes, "one_hot"); !checked)
        return checked;
    auto values = out.values<std::int64_t>();
    std::fill(values.begin(), values.end(), 0);
    for (std::size_t i = 0; i < static_cast<std::size_t>(x.elementCount()); ++i)
        values[i * static_cast<std::size_t>(classes) + static_cast<std::size_t>(indexAt(x, i))] = 1;
    return {};
}

// out = x; then, in index order, out[o, index[j], :] += alpha·source[o, j, :].
template <class T>
void indexAdd(const Tensor& source, const Tensor& index, const DimSplit& split, T alpha,
              Tensor& out) {
    const std::int64_t count = index.elementCount();
    const auto from = source.values<T>();
    auto to = out.values<T>();
    for (std::int64_t j = 0; j < count; ++j) {
        const std::int64_t target = indexAt(index, static_cast<std::size_t>(j));
        for (std::int64_t o = 0; o < split.outer; ++o)
            for (std::int64_t i = 0; i < split.inner; ++i) {
                const auto s = static_cast<std::size_t>((o * count + j) * split.inner + i);
                T& acc = to[static_cast<std::size_t>((o * split.size + target) * split.inner + i)];
                if constexpr (kIsInt<T>)
                    acc = wrapMultiplyAdd(acc, alpha, from[s]);
                else
                    acc = alpha == T(1) ? acc + from[s] : acc + alpha * from[s];
            }
    }
}

Expected<void> runIndexAdd(Args args, const Attributes& attrs, Tensor& out) {
    const Tensor& x = args[0];
    const std::size_t dim = dimAttr(attrs, x.shape().size());
    const std::int64_t size = x.shape().empty() ? 1 : x.shape()[dim];
    if (auto checked = checkIndices(args[1], size, "index_add"); !checked)
        return checked;
    if (x.elementCount() == 0)
        return {};
    const DimSplit split = splitAt(x.shape(), dim);
    copyElements(x, 0, out, 0, x.elementCount());
    const double alpha = core::ops::attrOptionalNumber(attrs, "alpha").value().value_or(1.0);
    visitDType(x.dtype(), [&](auto t) {
        using T = decltype(t);
        // Inference has checked that an integer tensor's alpha is an integer of int64 range.
        if constexpr (kIsInt<T>)
            indexAdd<T>(args[2], args[1], split, static_cast<T>(static_cast<std::int64_t>(alpha)),
                        out);
        else if constexpr (!std::is_same_v<T, bool>)
            indexAdd<T>(args[2], args[1], split, static_cast<T>(alpha), out);
    });
    return {};
}

} // namespace

Expected<Tensor> runIndexOp(OpCode op, Args args, const Attributes& attrs, const TensorSpec& spec) {
    auto out = Tensor::allocate(spec.dtype, spec.shape);
    if (!out)
        return out;
    Expected<void> done;
    switch (op) {
    case OpCode::Gather:
        done = gather(args[0], args[1], dimAttr(attrs, args[0].shape().size()), *out);
        break;
    case OpCode::IndexSelect:
        done = indexSelect(args[0], args[1], dimAttr(attrs, args[0].shape().size()), *out,
                           "index_select");
        break;
    case OpCode::Embedding:
        done = indexSelect(args[0], args[1], 0, *out, "embedding");
        break;
    case OpCode::OneHot:
        done = oneHot(args[0], *out);
        break;
    default:
        done = runIndexAdd(args, attrs, *out);
        break;
    }
    if (!done)
        return tl::unexpected(done.error());
    return out;
}

} // namespace goblin::reference::detail
