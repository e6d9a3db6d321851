// Dtype and shape inference of elementwise ops: NumPy broadcasting, no implicit type promotion
// (a graph casts explicitly, so a dtype mismatch is an error, never a silent conversion).
#include <cmath>
#include <string>

#include "infer.hpp"

namespace goblin::core::ops::detail {
namespace {

enum class Kinds { Numeric, Float, Integer, Any };

bool accepts(Kinds kinds, DType dtype) {
    switch (kinds) {
    case Kinds::Numeric:
        return dtype != DType::Bool;
    case Kinds::Float:
        return isFloatingPoint(dtype);
    case Kinds::Integer:
        return dtype == DType::I32 || dtype == DType::I64 || dtype == DType::Bool;
    case Kinds::Any:
        return true;
    }
    return false;
}

const char* kindsName(Kinds kinds) {
    switch (kinds) {
    case Kinds::Numeric:
        return "a numeric dtype (f32, f64, i32, i64)";
    case Kinds::Float:
        return "a floating-point dtype (f32, f64)";
    case Kinds::Integer:
        return "an integer or bool dtype";
    case Kinds::Any:
        return "any dtype";
    }
    return "";
}

Kinds kindsOf(OpCode code) {
    switch (code) {
    case OpCode::Div:
    case OpCode::Pow:
    case OpCode::Exp:
    case OpCode::Log:
    case OpCode::Sqrt:
    case OpCode::Rsqrt:
    case OpCode::Tanh:
    case OpCode::Sigmoid:
    case OpCode::Erf:
    case OpCode::Lgamma:
    case OpCode::Gelu:
        return Kinds::Float;
    case OpCode::BitwiseAnd:
    case OpCode::BitwiseOr:
    case OpCode::BitwiseXor:
    case OpCode::BitwiseNot:
        return Kinds::Integer;
    case OpCode::Eq:
    case OpCode::Ne:
    case OpCode::Lt:
    case OpCode::Le:
    case OpCode::Gt:
    case OpCode::Ge:
    case OpCode::LogicalAnd:
    case OpCode::LogicalOr:
    case OpCode::LogicalXor:
    case OpCode::LogicalNot:
    case OpCode::IsNan:
        return Kinds::Any;
    default:
        return Kinds::Numeric;
    }
}

bool producesBool(OpCode code) {
    return (code >= OpCode::Eq && code <= OpCode::LogicalNot) || code == OpCode::IsNan;
}

Expected<void> checkAttributes(OpCode code, DType dtype, const Attributes& attrs) {
    if (code == OpCode::Gelu) {
        if (auto only = onlyAttributes(attrs, {"approximate"}); !only)
            return only;
        auto form = attrString(attrs, "approximate", std::string("none"));
        if (!form)
            return tl::unexpected(form.error());
        if (*form != "none" && *form != "tanh")
            return makeError(ErrorCode::InvalidInput, "gelu approximate must be 'none' or 'tanh'");
        return {};
    }
    if (code != OpCode::Clamp)
        return onlyAttributes(attrs, {});
    if (auto only = onlyAttributes(attrs, {"min", "max"}); !only)
        return only;
    auto low = attrOptionalNumber(attrs, "min");
    auto high = attrOptionalNumber(attrs, "max");
    if (!low || !high)
        return tl::unexpected(!low ? low.error() : high.error());
    if (!*low && !*high)
        return makeError(ErrorCode::InvalidInput, "clamp needs at least one of min and max");
    for (const auto& bound : {*low, *high}) {
        const bool integral = bound && std::isfinite(*bound) && std::trunc(*bound) == *bound;
        if (bound && !isFloatingPoint(dtype) && !integral)
            return makeError(ErrorCode::InvalidInput,
                             "clamp bounds of an integer tensor must be integers");
    }
    return {};
}

} // namespace

Expected<TensorSpec> inferElementwise(OpCode code, Inputs inputs, const Attributes& attrs) {
    const std::string name(opInfo(code).name);
    std::size_t first = 0;
    if (code == OpCode::Where) {
        if (inputs[0].dtype != DType::Bool)
            return makeError(ErrorCode::UnsupportedDtype, "where: the condition must be bool");
        first = 1;
    }
    const DType dtype = inputs[first].dtype;
    for (std::size_t i = first; i < inputs.size(); ++i)
        if (inputs[i].dtype != dtype)
            return makeError(ErrorCode::UnsupportedDtype,
                             name + ": inputs have different dtypes (" +
                                 std::string(wireName(dtype)) + " and " +
                                 std::string(wireName(inputs[i].dtype)) + "); cast explicitly");
    const Kinds kinds = code == OpCode::Where ? Kinds::Any : kindsOf(code);
    if (!accepts(kinds, dtype))
        return makeError(ErrorCode::UnsupportedDtype, name + " takes " + kindsName(kinds) +
                                                          ", not " + std::string(wireName(dtype)));
    if (auto checked = checkAttributes(code, dtype, attrs); !checked)
        return tl::unexpected(checked.error());
    Shape shape = inputs[0].shape;
    for (std::size_t i = 1; i < inputs.size(); ++i) {
        auto joined = broadcastShapes(shape, inputs[i].shape);
        if (!joined)
            return makeError(ErrorCode::ShapeMismatch, name + ": " + joined.error().message);
        shape = std::move(*joined);
    }
    return TensorSpec{producesBool(code) ? DType::Bool : dtype, std::move(shape)};
}

} // namespace goblin::core::ops::detail
