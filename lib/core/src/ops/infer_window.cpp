// Dtype and shape inference of the sliding-window ops: conv2d and its two gradients (NCHW input,
// OIHW weight with I = C/groups) and the max_pool2d family (NCHW or CHW).
#include <string>

#include "goblin/core/ops/op_geometry.hpp"
#include "infer.hpp"

namespace goblin::core::ops::detail {
namespace {

// Spatial dims and kernels beyond this are refused (a dim may be huge when another is 0), so the
// output-size arithmetic cannot overflow.
constexpr std::int64_t kMaxSpatial = std::int64_t{1} << 40;

Expected<void> sameFloatDType(Inputs inputs, const char* op) {
    for (const TensorSpec& input : inputs)
        if (input.dtype != inputs[0].dtype || !isFloatingPoint(input.dtype))
            return makeError(ErrorCode::UnsupportedDtype,
                             std::string(op) + " takes inputs of one floating-point dtype");
    return {};
}

// The conv2d output shape of input × weight (both NCHW/OIHW), or an error naming the op.
Expected<Shape> convOutput(const Shape& input, const Shape& weight, const Conv2dParams& params,
                           const char* op) {
    if (input.size() != 4 || weight.size() != 4)
        return mismatch(std::string(op) + ": input " + describe(input) + " and weight " +
                        describe(weight) + " must be 4-D (NCHW, OIHW)");
    for (std::int64_t dim : input)
        if (dim < 0)
            return mismatch(std::string(op) + ": negative dims in " + describe(input));
    for (std::size_t d = 2; d < 4; ++d)
        if (input[d] > kMaxSpatial || weight[d] > kMaxSpatial)
            return makeError(ErrorCode::LimitExceeded,
                             std::string(op) + ": spatial dims are too large");
    if (input[1] % params.groups != 0 || input[1] / params.groups != weight[1] ||
        weight[0] % params.groups != 0)
        return mismatch(std::string(op) + ": input " + describe(input) + ", weight " +
                        describe(weight) + " and groups " + std::to_string(params.groups) +
                        " do not fit");
    Shape out{input[0], weight[0], 0, 0};
    for (std::size_t i = 0; i < 2; ++i) {
        auto size = convOutputSize(input[2 + i], weight[2 + i], params.stride[i], params.padding[i],
                                   params.dilation[i]);
        if (!size)
            return mismatch(std::string(op) + ": " + size.error().message);
        out[2 + i] = *size;
    }
    return out;
}

Expected<TensorSpec> inferConv(OpCode code, Inputs inputs, const Attributes& attrs) {
    const char* op = opInfo(code).name.data();
    const bool inputGrad = code == OpCode::Conv2dInputGrad;
    const bool weightGrad = code == OpCode::Conv2dWeightGrad;
    auto only =
        inputGrad
            ? onlyAttributes(attrs, {"input_shape", "stride", "padding", "dilation", "groups"})
        : weightGrad
            ? onlyAttributes(attrs, {"weight_shape", "stride", "padding", "dilation", "groups"})
            : onlyAttributes(attrs, {"stride", "padding", "dilation", "groups"});
    if (!only)
        return failureOf(only);
    if (auto dtypes = sameFloatDType(inputs, op); !dtypes)
        return failureOf(dtypes);
    auto params = conv2dParams(attrs);
    if (!params)
        return failureOf(params);
    if (!inputGrad && !weightGrad) {
        auto out = convOutput(inputs[0].shape, inputs[1].shape, *params, op);
        return out ? checkedSpec(inputs[0].dtype, std::move(*out)) : failureOf(out);
    }
    auto given = attrIntList(attrs, inputGrad ? "input_shape" : "weight_shape", std::nullopt);
    if (!given)
        return failureOf(given);
    if (given->size() != 4)
        return invalid(std::string(op) + ": the shape attribute must list 4 dims");
    const Shape& input = inputGrad ? *given : inputs[0].shape;
    const Shape& weight = inputGrad ? inputs[1].shape : *given;
    const Shape& gradOut = inputGrad ? inputs[0].shape : inputs[1].shape;
    for (std::int64_t dim : *given)
        if (dim < 0)
            return invalid(std::string(op) + ": negative dims in " + describe(*given));
    auto out = convOutput(input, weight, *params, op);
    if (!out)
        return failureOf(out);
    if (gradOut != *out)
        return mismatch(std::string(op) + ": grad_out " + describe(gradOut) +
                        " is not conv2d's output " + describe(*out));
    return checkedSpec(inputs[0].dtype, *given);
}

Expected<TensorSpec> inferPool(OpCode code, Inputs inputs, const Attributes& attrs) {
    const char* op = opInfo(code).name.data();
    if (auto only = onlyAttributes(attrs, {"kernel", "stride", "padding", "dilation", "ceil_mode"});
        !only)
        return failureOf(only);
    if (auto dtypes = sameFloatDType(inputs, op); !dtypes)
        return failureOf(dtypes);
    auto params = pool2dParams(attrs);
    if (!params)
        return failureOf(params);
    const TensorSpec& x = inputs.back();
    const std::size_t rank = x.shape.size();
    if (rank != 3 && rank != 4)
        return mismatch(std::string(op) + ": the input must be NCHW or CHW, not " +
                        describe(x.shape));
    if (x.shape[rank - 1] > kMaxSpatial || x.shape[rank - 2] > kMaxSpatial)
        return makeError(ErrorCode::LimitExceeded,
                         std::string(op) + ": spatial dims are too large");
    for (std::size_t d = rank - 3; d < rank; ++d)
        if (x.shape[d] == 0)
            return mismatch(std::string(op) + ": channels, height and width must be non-empty in " +
                            describe(x.shape));
    Shape out = x.shape;
    for (std::size_t i = 0; i < 2; ++i) {
        auto size = poolOutputSize(x.shape[rank - 2 + i], params->kernel[i], params->stride[i],
                                   params->padding[i], params->dilation[i], params->ceilMode);
        if (!size)
            return failureOf(size);
        out[rank - 2 + i] = *size;
    }
    if (code == OpCode::MaxPool2d)
        return TensorSpec{x.dtype, std::move(out)};
    if (code == OpCode::MaxPool2dIndices)
        return TensorSpec{DType::I64, std::move(out)};
    if (inputs[0].shape != out)
        return mismatch("max_pool2d_backward: grad_out " + describe(inputs[0].shape) +
                        " is not max_pool2d's output " + describe(out));
    return x;
}

} // namespace

Expected<TensorSpec> inferWindowOp(OpCode code, Inputs inputs, const Attributes& attrs) {
    if (code == OpCode::Conv2d || code == OpCode::Conv2dInputGrad ||
        code == OpCode::Conv2dWeightGrad)
        return inferConv(code, inputs, attrs);
    return inferPool(code, inputs, attrs);
}

} // namespace goblin::core::ops::detail
