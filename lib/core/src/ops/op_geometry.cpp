// Slice clamping and the conv2d / max_pool2d parameters and output sizes.
#include "goblin/core/ops/op_geometry.hpp"

#include <string>

namespace goblin::core::ops {
namespace {

// Window parameters beyond this are refused, so no size arithmetic below can overflow.
constexpr std::int64_t kMaxWindowValue = std::int64_t{1} << 31;

Expected<Pair> pairAttr(const Attributes& attrs, std::string_view name, Pair fallback,
                        std::int64_t minimum) {
    auto list = attrIntList(attrs, name, IntList{});
    if (!list)
        return tl::unexpected(list.error());
    if (list->empty())
        return fallback;
    if (list->size() != 2)
        return makeError(ErrorCode::InvalidInput,
                         "attribute '" + std::string(name) + "' must list 2 integers");
    for (std::int64_t value : *list)
        if (value < minimum || value > kMaxWindowValue)
            return makeError(ErrorCode::InvalidInput, "attribute '" + std::string(name) +
                                                          "' must be ≥ " + std::to_string(minimum));
    return Pair{(*list)[0], (*list)[1]};
}

} // namespace

SliceRange sliceRange(std::int64_t size, std::int64_t start, std::int64_t end, std::int64_t step) {
    if (start < 0)
        start += size;
    if (end < 0)
        end += size;
    start = start < 0 ? 0 : (start > size ? size : start);
    end = end < start ? start : (end > size ? size : end);
    const std::int64_t span = end - start;
    return {start, span == 0 ? 0 : (span - 1) / step + 1};
}

Expected<Conv2dParams> conv2dParams(const Attributes& attrs) {
    Conv2dParams params;
    auto stride = pairAttr(attrs, "stride", params.stride, 1);
    auto padding = pairAttr(attrs, "padding", params.padding, 0);
    auto dilation = pairAttr(attrs, "dilation", params.dilation, 1);
    auto groups = attrInt(attrs, "groups", 1);
    if (!stride || !padding || !dilation || !groups)
        return tl::unexpected(!stride     ? stride.error()
                              : !padding  ? padding.error()
                              : !dilation ? dilation.error()
                                          : groups.error());
    if (*groups < 1 || *groups > kMaxWindowValue)
        return makeError(ErrorCode::InvalidInput, "groups must be ≥ 1");
    return Conv2dParams{*stride, *padding, *dilation, *groups};
}

Expected<Pool2dParams> pool2dParams(const Attributes& attrs) {
    auto kernel = pairAttr(attrs, "kernel", Pair{0, 0}, 1);
    if (!kernel)
        return tl::unexpected(kernel.error());
    if ((*kernel)[0] == 0)
        return makeError(ErrorCode::InvalidInput, "attribute 'kernel' is required");
    auto stride = pairAttr(attrs, "stride", *kernel, 1);
    auto padding = pairAttr(attrs, "padding", Pair{0, 0}, 0);
    auto dilation = pairAttr(attrs, "dilation", Pair{1, 1}, 1);
    auto ceilMode = attrBool(attrs, "ceil_mode", false);
    if (!stride || !padding || !dilation || !ceilMode)
        return tl::unexpected(!stride     ? stride.error()
                              : !padding  ? padding.error()
                              : !dilation ? dilation.error()
                                          : ceilMode.error());
    for (std::size_t i = 0; i < 2; ++i)
        if ((*padding)[i] > (*kernel)[i] / 2)
            return makeError(ErrorCode::InvalidInput,
                             "max_pool2d: padding must be at most half the kernel");
    return Pool2dParams{*kernel, *stride, *padding, *dilation, *ceilMode};
}

Expected<std::int64_t> convOutputSize(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                                      std::int64_t padding, std::int64_t dilation) {
    const std::int64_t span = dilation * (kernel - 1) + 1;
    if (in + 2 * padding < span)
        return makeError(ErrorCode::ShapeMismatch, "the kernel spans " + std::to_string(span) +
                                                       " but the padded input has only " +
                                                       std::to_string(in + 2 * padding));
    return (in + 2 * padding - span) / stride + 1;
}

Expected<std::int64_t> poolOutputSize(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                                      std::int64_t padding, std::int64_t dilation, bool ceilMode) {
    const std::int64_t numerator =
        in + 2 * padding - dilation * (kernel - 1) - 1 + (ceilMode ? stride - 1 : 0);
    // Division rounding toward −∞, as PyTorch's div_rtn.
    std::int64_t out =
        numerator / stride - ((numerator % stride != 0 && numerator < 0) ? 1 : 0) + 1;
    if (ceilMode && (out - 1) * stride >= in + padding)
        --out;
    if (out < 1)
        return makeError(ErrorCode::ShapeMismatch, "max_pool2d: input size " + std::to_string(in) +
                                                       " gives an output size of " +
                                                       std::to_string(out));
    return out;
}

Conv2dGeometry conv2dGeometry(const core::Shape& input, const core::Shape& weight,
                              const core::Shape& output, std::int64_t groups) {
    return {input[0],  input[1],  input[2],  input[3],  weight[0], weight[1],
            weight[2], weight[3], output[2], output[3], groups};
}

Conv2dTaps conv2dTaps(const core::Shape& input, const core::Shape& weight,
                      const core::Shape& output, const Conv2dParams& params) {
    return {conv2dGeometry(input, weight, output, params.groups), params};
}

} // namespace goblin::core::ops
