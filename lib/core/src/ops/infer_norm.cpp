// Dtype and shape inference of layer_norm and layer_norm_backward (normalised over the trailing
// normalized_ndim dims; weight and bias have exactly those dims).
#include <cmath>
#include <string>

#include "infer.hpp"

namespace goblin::core::ops::detail {
namespace {

// Checks dtypes, normalized_ndim and eps; returns the normalised trailing shape.
Expected<Shape> normalizedShape(Inputs inputs, const TensorSpec& x, const Attributes& attrs,
                                const char* op) {
    for (const TensorSpec& input : inputs)
        if (input.dtype != x.dtype || !isFloatingPoint(input.dtype))
            return makeError(ErrorCode::UnsupportedDtype,
                             std::string(op) + " takes inputs of one floating-point dtype");
    auto ndim = attrInt(attrs, "normalized_ndim", std::nullopt);
    auto eps = attrOptionalNumber(attrs, "eps");
    if (!ndim || !eps)
        return !ndim ? failureOf(ndim) : failureOf(eps);
    if (*ndim < 1 || *ndim > static_cast<std::int64_t>(x.shape.size()))
        return invalid(std::string(op) + ": normalized_ndim must be between 1 and the rank of " +
                       describe(x.shape));
    if (*eps && (!std::isfinite(**eps) || **eps < 0))
        return invalid(std::string(op) + ": eps must be finite and ≥ 0");
    return Shape(x.shape.end() - *ndim, x.shape.end());
}

Expected<TensorSpec> inferLayerNorm(Inputs inputs, const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {"normalized_ndim", "eps"}); !only)
        return failureOf(only);
    const TensorSpec& x = inputs[0];
    auto trailing = normalizedShape(inputs, x, attrs, "layer_norm");
    if (!trailing)
        return failureOf(trailing);
    if (inputs[1].shape != *trailing || inputs[2].shape != *trailing)
        return mismatch("layer_norm: weight and bias must have shape " + describe(*trailing));
    return x;
}

Expected<TensorSpec> inferLayerNormBackward(Inputs inputs, const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {"normalized_ndim", "eps", "output"}); !only)
        return failureOf(only);
    const TensorSpec& x = inputs[1];
    auto trailing = normalizedShape(inputs, x, attrs, "layer_norm_backward");
    auto output = attrString(attrs, "output", std::nullopt);
    if (!trailing || !output)
        return !trailing ? failureOf(trailing) : failureOf(output);
    if (*output != "input" && *output != "weight" && *output != "bias")
        return invalid("layer_norm_backward: output must be 'input', 'weight' or 'bias'");
    if (inputs[0].shape != x.shape)
        return mismatch("layer_norm_backward: grad_out " + describe(inputs[0].shape) +
                        " must have the shape of x " + describe(x.shape));
    if (inputs[2].shape != *trailing)
        return mismatch("layer_norm_backward: weight must have shape " + describe(*trailing));
    return *output == "input" ? x : inputs[2];
}

} // namespace

Expected<TensorSpec> inferNormOp(OpCode code, Inputs inputs, const Attributes& attrs) {
    if (code == OpCode::LayerNorm)
        return inferLayerNorm(inputs, attrs);
    return inferLayerNormBackward(inputs, attrs);
}

} // namespace goblin::core::ops::detail
