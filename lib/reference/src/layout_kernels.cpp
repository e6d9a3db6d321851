// Reference kernels of concat, slice and constant pad: element copies (exact, any dtype).
#include <cstring>
#include <limits>

#include "goblin/core/ops/op_geometry.hpp"
#include "kernels.hpp"

namespace goblin::reference::detail {
namespace {

std::size_t dimAttr(const Attributes& attrs, std::size_t rank) {
    const std::int64_t dim = core::ops::attrInt(attrs, "dim", 0).value_or(0);
    return static_cast<std::size_t>(dim < 0 ? dim + static_cast<std::int64_t>(rank) : dim);
}

std::byte* at(Tensor& tensor, std::int64_t element) {
    return tensor.bytes().data() +
           static_cast<std::size_t>(element) * core::itemSize(tensor.dtype());
}
const std::byte* at(const Tensor& tensor, std::int64_t element) {
    return tensor.bytes().data() +
           static_cast<std::size_t>(element) * core::itemSize(tensor.dtype());
}

void copy(const Tensor& from, std::int64_t fromOffset, Tensor& to, std::int64_t toOffset,
          std::int64_t count) {
    if (count > 0)
        std::memcpy(at(to, toOffset), at(from, fromOffset),
                    static_cast<std::size_t>(count) * core::itemSize(from.dtype()));
}

// For each outer position, the inputs' blocks one after the other.
void concat(Args args, std::size_t dim, Tensor& out) {
    const DimSplit whole = splitAt(out.shape(), dim);
    std::int64_t written = 0;
    for (std::int64_t o = 0; o < whole.outer; ++o)
        for (const Tensor& input : args) {
            const DimSplit part = splitAt(input.shape(), dim);
            copy(input, o * part.size * part.inner, out, written, part.size * part.inner);
            written += part.size * part.inner;
        }
}

void slice(const Tensor& x, const Attributes& attrs, Tensor& out) {
    const std::size_t dim = dimAttr(attrs, x.shape().size());
    const DimSplit split = splitAt(x.shape(), dim);
    const auto range = core::ops::sliceRange(
        split.size, core::ops::attrInt(attrs, "start", 0).value(),
        core::ops::attrInt(attrs, "end", std::numeric_limits<std::int64_t>::max()).value(),
        core::ops::attrInt(attrs, "step", 1).value());
    const std::int64_t step = core::ops::attrInt(attrs, "step", 1).value();
    for (std::int64_t o = 0; o < split.outer; ++o) {
        if (step == 1) { // one contiguous run per outer position
            copy(x, (o * split.size + range.start) * split.inner, out,
                 o * range.length * split.inner, range.length * split.inner);
            continue;
        }
        for (std::int64_t j = 0; j < range.length; ++j)
            copy(x, (o * split.size + range.start + j * step) * split.inner, out,
                 (o * range.length + j) * split.inner, split.inner);
    }
}

template <class T> void fill(Tensor& out, double value) {
    for (T& element : out.values<T>())
        element = static_cast<T>(value);
}

// Fill with the value, then copy every input element whose padded position lies inside the output
// (negative pads crop).
void pad(const Tensor& x, const Attributes& attrs, Tensor& out) {
    const double value = core::ops::attrOptionalNumber(attrs, "value").value().value_or(0.0);
    visitDType(out.dtype(), [&](auto t) {
        using T = decltype(t);
        if constexpr (std::is_same_v<T, bool>)
            fill<T>(out, value != 0 ? 1.0 : 0.0);
        else if constexpr (std::is_integral_v<T>)
            for (T& element : out.values<T>())
                element = static_cast<T>(static_cast<std::int64_t>(value));
        else
            fill<T>(out, value);
    });
    const Shape& shape = x.shape();
    const std::size_t rank = shape.size();
    const core::ops::IntList pads = core::ops::attrIntList(attrs, "pads", std::nullopt).value();
    std::vector<std::int64_t> before(rank, 0);
    for (std::size_t i = 0; i < pads.size() / 2; ++i)
        before[rank - 1 - i] = pads[2 * i];
    const auto outStrides = stridesOf(out.shape());
    for (std::int64_t i = 0; i < x.elementCount(); ++i) {
        std::int64_t rest = i, offset = 0;
        bool inside = true;
        for (std::size_t d = rank; d-- > 0;) {
            const std::int64_t position = rest % shape[d] + before[d];
            rest /= shape[d];
            inside = inside && position >= 0 && position < out.shape()[d];
            offset += position * outStrides[d];
        }
        if (inside)
            copy(x, i, out, offset, 1);
    }
}

} // namespace

Expected<Tensor> runLayoutOp(OpCode op, Args args, const Attributes& attrs,
                             const TensorSpec& spec) {
    auto out = Tensor::allocate(spec.dtype, spec.shape);
    if (!out)
        return out;
    switch (op) {
    case OpCode::Concat:
        concat(args, dimAttr(attrs, spec.shape.size()), *out);
        break;
    case OpCode::Slice:
        slice(args[0], attrs, *out);
        break;
    default:
        pad(args[0], attrs, *out);
        break;
    }
    return out;
}

} // namespace goblin::reference::detail
