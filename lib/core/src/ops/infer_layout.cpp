// Dtype and shape inference of concat (variadic), slice and constant pad.
#include <cmath>
#include <limits>
#include <string>

#include "goblin/core/ops/op_geometry.hpp"
#include "infer.hpp"

namespace goblin::core::ops::detail {
namespace {

// |pad| beyond this is refused, so padded sizes cannot overflow.
constexpr std::int64_t kMaxPad = std::int64_t{1} << 40;

Expected<TensorSpec> inferConcat(Inputs inputs, const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {"dim"}); !only)
        return failureOf(only);
    const TensorSpec& first = inputs[0];
    if (first.shape.empty())
        return mismatch("concat: scalars cannot be concatenated");
    auto dim = attrInt(attrs, "dim", 0);
    if (!dim)
        return failureOf(dim);
    auto normal = normaliseDim(*dim, first.shape.size());
    if (!normal)
        return failureOf(normal);
    const auto at = static_cast<std::size_t>(*normal);
    Shape out = first.shape;
    out[at] = 0;
    for (const TensorSpec& input : inputs) {
        if (input.dtype != first.dtype)
            return makeError(ErrorCode::UnsupportedDtype, "concat: inputs have different dtypes");
        bool fits = input.shape.size() == first.shape.size();
        for (std::size_t d = 0; fits && d < out.size(); ++d)
            fits = d == at || input.shape[d] == first.shape[d];
        if (!fits)
            return mismatch("concat: " + describe(input.shape) + " does not match " +
                            describe(first.shape) + " outside dim " + std::to_string(*normal));
        if (__builtin_add_overflow(out[at], input.shape[at], &out[at]))
            return makeError(ErrorCode::LimitExceeded, "concat: the result is too large");
    }
    return checkedSpec(first.dtype, std::move(out));
}

Expected<TensorSpec> inferSlice(const TensorSpec& x, const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {"dim", "start", "end", "step"}); !only)
        return failureOf(only);
    if (x.shape.empty())
        return mismatch("slice cannot be applied to a scalar");
    auto dim = attrInt(attrs, "dim", 0);
    auto start = attrInt(attrs, "start", 0);
    auto end = attrInt(attrs, "end", std::numeric_limits<std::int64_t>::max());
    auto step = attrInt(attrs, "step", 1);
    if (!dim || !start || !end || !step)
        return !dim     ? failureOf(dim)
               : !start ? failureOf(start)
               : !end   ? failureOf(end)
                        : failureOf(step);
    if (*step < 1)
        return invalid("slice: step must be ≥ 1");
    auto normal = normaliseDim(*dim, x.shape.size());
    if (!normal)
        return failureOf(normal);
    Shape out = x.shape;
    const auto at = static_cast<std::size_t>(*normal);
    out[at] = sliceRange(x.shape[at], *start, *end, *step).length;
    return TensorSpec{x.dtype, std::move(out)};
}

// The fill value must be representable: integral and in range for integers, 0 or 1 for bool.
Expected<void> checkPadValue(DType dtype, std::optional<double> value) {
    if (!value || isFloatingPoint(dtype))
        return {};
    const double v = *value;
    const bool integral = std::isfinite(v) && std::trunc(v) == v;
    const double low = dtype == DType::Bool  ? 0
                       : dtype == DType::I32 ? -2147483648.0
                                             : -9223372036854775808.0;
    const double high = dtype == DType::Bool  ? 1
                        : dtype == DType::I32 ? 2147483647.0
                                              : 9223372036854775807.0;
    if (!integral || v < low || v >= high + (dtype == DType::I64 ? 0 : 1))
        return invalid("pad: value " + std::to_string(v) + " does not fit " +
                       std::string(wireName(dtype)));
    return {};
}

Expected<TensorSpec> inferPad(const TensorSpec& x, const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {"pads", "value"}); !only)
        return failureOf(only);
    auto pads = attrIntList(attrs, "pads", std::nullopt);
    auto value = attrOptionalNumber(attrs, "value");
    if (!pads || !value)
        return !pads ? failureOf(pads) : failureOf(value);
    if (pads->size() % 2 != 0 || pads->size() > 2 * x.shape.size())
        return invalid("pad: pads must hold (before, after) pairs for at most every dim of " +
                       describe(x.shape));
    if (auto fits = checkPadValue(x.dtype, *value); !fits)
        return failureOf(fits);
    Shape out = x.shape;
    for (std::size_t i = 0; i < pads->size() / 2; ++i) {
        const std::int64_t before = (*pads)[2 * i], after = (*pads)[2 * i + 1];
        if (before < -kMaxPad || before > kMaxPad || after < -kMaxPad || after > kMaxPad)
            return invalid("pad: a pad is too large");
        std::int64_t& size = out[out.size() - 1 - i];
        if (__builtin_add_overflow(size, before + after, &size))
            return makeError(ErrorCode::LimitExceeded, "pad: the result is too large");
        if (size < 0)
            return mismatch("pad: padding " + describe(x.shape) + " gives a negative size");
    }
    return checkedSpec(x.dtype, std::move(out));
}

} // namespace

Expected<TensorSpec> inferLayoutOp(OpCode code, Inputs inputs, const Attributes& attrs) {
    switch (code) {
    case OpCode::Concat:
        return inferConcat(inputs, attrs);
    case OpCode::Slice:
        return inferSlice(inputs[0], attrs);
    default:
        return inferPad(inputs[0], attrs);
    }
}

} // namespace goblin::core::ops::detail
