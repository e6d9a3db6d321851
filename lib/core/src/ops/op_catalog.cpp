// The constant op table, name lookup, tolerance bounds and the inference dispatch.
#include "goblin/core/ops/op_catalog.hpp"

#include <array>
#include <cassert>
#include <cmath>
#include <string>

#include "infer.hpp"

namespace goblin::core::ops {
namespace {

constexpr Tolerance kExact{};
constexpr Tolerance ulp(double ulps, bool inputScaled = false, double perReduced = 0) {
    return Tolerance{ToleranceClass::Ulp, ulps, perReduced, inputScaled};
}
constexpr Tolerance kSum{ToleranceClass::SumBound, 0, 0, false};
constexpr Tolerance kMatmul{ToleranceClass::MatmulBound, 0, 0, false};

using O = OpCode;
// In OpCode order; checked by the static_assert on the table size and by indexOf below.
constexpr std::array<OpInfo, kOpCount> kTable{{
    {O::Add, "add", 2, kExact}, // exact for one correctly rounded IEEE operation
    {O::Sub, "sub", 2, kExact},
    {O::Mul, "mul", 2, kExact},
    {O::Div, "div", 2, kExact},
    {O::Pow, "pow", 2, ulp(4)},
    {O::Maximum, "maximum", 2, kExact},
    {O::Minimum, "minimum", 2, kExact},
    {O::FloorDivide, "floor_divide", 2, kExact},
    {O::Remainder, "remainder", 2, kExact},
    {O::Eq, "eq", 2, kExact},
    {O::Ne, "ne", 2, kExact},
    {O::Lt, "lt", 2, kExact},
    {O::Le, "le", 2, kExact},
    {O::Gt, "gt", 2, kExact},
    {O::Ge, "ge", 2, kExact},
    {O::LogicalAnd, "logical_and", 2, kExact},
    {O::LogicalOr, "logical_or", 2, kExact},
    {O::LogicalXor, "logical_xor", 2, kExact},
    {O::LogicalNot, "logical_not", 1, kExact},
    {O::BitwiseAnd, "bitwise_and", 2, kExact},
    {O::BitwiseOr, "bitwise_or", 2, kExact},
    {O::BitwiseXor, "bitwise_xor", 2, kExact},
    {O::BitwiseNot, "bitwise_not", 1, kExact},
    {O::Neg, "neg", 1, kExact},
    {O::Abs, "abs", 1, kExact},
    {O::Exp, "exp", 1, ulp(4)},
    {O::Log, "log", 1, ulp(4)},
    {O::Sqrt, "sqrt", 1, kExact}, // IEEE sqrt is correctly rounded
    {O::Rsqrt, "rsqrt", 1, ulp(2)},
    {O::Tanh, "tanh", 1, ulp(4)},
    {O::Sigmoid, "sigmoid", 1, ulp(4)},
    {O::Erf, "erf", 1, ulp(4)},
    {O::Lgamma, "lgamma", 1, ulp(8, true)},
    {O::Relu, "relu", 1, kExact},
    {O::Gelu, "gelu", 1, ulp(8, true)},
    {O::IsNan, "isnan", 1, kExact},
    {O::Where, "where", 3, kExact},
    {O::Clamp, "clamp", 1, kExact},
    {O::Sum, "sum", 1, kSum},
    {O::Mean, "mean", 1, kSum},
    {O::Amax, "amax", 1, kExact},
    {O::Amin, "amin", 1, kExact},
    {O::Prod, "prod", 1, kSum},
    {O::Var, "var", 1, kSum},
    {O::Argmax, "argmax", 1, kExact},
    {O::Argmin, "argmin", 1, kExact},
    {O::Cumsum, "cumsum", 1, kSum},
    {O::Softmax, "softmax", 1, ulp(8, false, 2)},
    {O::LogSoftmax, "log_softmax", 1, ulp(8, true, 2)},
    {O::Cast, "cast", 1, kExact},
    {O::Reshape, "reshape", 1, kExact},
    {O::Permute, "permute", 1, kExact},
    {O::Expand, "expand", 1, kExact},
    {O::Matmul, "matmul", 2, kMatmul},
    {O::Gather, "gather", 2, kExact},
    {O::IndexSelect, "index_select", 2, kExact},
    {O::Embedding, "embedding", 2, kExact},
    {O::OneHot, "one_hot", 1, kExact},
    {O::IndexAdd, "index_add", 3, kSum}, // integers: SumBound with u = 0 is exact
    // scale |w|·(1 + rstd·(|x| + |mean|)) + |b| (docs/ops.md, "layer_norm")
    {O::LayerNorm, "layer_norm", 3, ulp(8, true, 2)},
    {O::LayerNormBackward, "layer_norm_backward", 3, kSum},
    {O::Concat, "concat", kVariadic, kExact},
    {O::Slice, "slice", 1, kExact},
    {O::Pad, "pad", 1, kExact},
    {O::Conv2d, "conv2d", 2, kMatmul},
    {O::Conv2dInputGrad, "conv2d_input_grad", 2, kMatmul},
    {O::Conv2dWeightGrad, "conv2d_weight_grad", 2, kMatmul},
    {O::MaxPool2d, "max_pool2d", 1, kExact},
    {O::MaxPool2dIndices, "max_pool2d_indices", 1, kExact},
    {O::MaxPool2dBackward, "max_pool2d_backward", 2, kSum},
    {O::DropoutMask, "dropout_mask", 0, kExact},
}};

constexpr bool tableInOrder() {
    for (std::size_t i = 0; i < kTable.size(); ++i)
        if (static_cast<std::size_t>(kTable[i].code) != i)
            return false;
    return true;
}
static_assert(tableInOrder(), "kTable must list the ops in OpCode order");

bool arityAccepts(int arity, std::size_t count) {
    if (arity == kVariadic)
        return count >= 1 && count <= static_cast<std::size_t>(kMaxVariadicArgs);
    return count == static_cast<std::size_t>(arity);
}

std::string arityText(int arity) {
    return arity == kVariadic ? "1 to " + std::to_string(kMaxVariadicArgs) : std::to_string(arity);
}

// The families added by catalog 3, each in its own infer_*.cpp.
Expected<TensorSpec> inferCatalog3(OpCode code, std::span<const TensorSpec> inputs,
                                   const Attributes& attrs) {
    switch (code) {
    case OpCode::Gather:
    case OpCode::IndexSelect:
    case OpCode::Embedding:
    case OpCode::OneHot:
    case OpCode::IndexAdd:
        return detail::inferIndexOp(code, inputs, attrs);
    case OpCode::LayerNorm:
    case OpCode::LayerNormBackward:
        return detail::inferNormOp(code, inputs, attrs);
    case OpCode::Concat:
    case OpCode::Slice:
    case OpCode::Pad:
        return detail::inferLayoutOp(code, inputs, attrs);
    case OpCode::DropoutMask:
        return detail::inferRandomOp(code, inputs, attrs);
    default:
        return detail::inferWindowOp(code, inputs, attrs);
    }
}

} // namespace

const OpInfo& opInfo(OpCode code) {
    assert(code < OpCode::Count && "opInfo of OpCode::Count");
    return kTable[static_cast<std::size_t>(code)];
}

std::optional<OpCode> opFromName(std::string_view name) {
    for (const OpInfo& info : kTable)
        if (info.name == name)
            return info.code;
    return std::nullopt;
}

Expected<TensorSpec> inferOutput(OpCode code, std::span<const TensorSpec> inputs,
                                 const Attributes& attrs) {
    if (code >= OpCode::Count)
        return makeError(ErrorCode::InvalidInput, "unknown op code");
    const OpInfo& info = opInfo(code);
    if (!arityAccepts(info.arity, inputs.size()))
        return makeError(ErrorCode::InvalidInput, std::string(info.name) + " takes " +
                                                      arityText(info.arity) + " inputs, got " +
                                                      std::to_string(inputs.size()));
    for (const TensorSpec& input : inputs)
        if (auto count = elementCount(input.shape); !count)
            return tl::unexpected(count.error());
    if (code >= OpCode::Gather)
        return inferCatalog3(code, inputs, attrs);
    if (code >= OpCode::Sum && code <= OpCode::LogSoftmax)
        return detail::inferReduction(code, inputs, attrs);
    if (code >= OpCode::Cast)
        return detail::inferShapeOp(code, inputs, attrs);
    return detail::inferElementwise(code, inputs, attrs);
}

double unitRoundoff(DType dtype) {
    if (dtype == DType::F32)
        return std::ldexp(1.0, -24);
    if (dtype == DType::F64)
        return std::ldexp(1.0, -53);
    return 0.0;
}

double toleranceBound(const Tolerance& tolerance, DType dtype, double reference, double scale,
                      std::int64_t reduced) {
    const double u = unitRoundoff(dtype);
    const double k = static_cast<double>(reduced);
    switch (tolerance.cls) {
    case ToleranceClass::Exact:
        return 0.0;
    case ToleranceClass::Ulp: {
        const double magnitude =
            std::abs(reference) + (tolerance.inputScaled ? std::abs(scale) : 0);
        return (tolerance.ulps + tolerance.ulpsPerReduced * k) * u * magnitude;
    }
    case ToleranceClass::SumBound:
    case ToleranceClass::MatmulBound: {
        // γ_K = K·u/(1−K·u), with one extra rounding for the final scaling (mean, var).
        const double ku = (k + 2) * u;
        return ku < 1 ? ku / (1 - ku) * std::abs(scale) : INFINITY;
    }
    }
    return 0.0;
}

} // namespace goblin::core::ops
