// Reference kernels of the elementwise ops (unary, binary with broadcasting, where, clamp); the
// per-element math is kernels/goblin_math.h, shared with the OpenCL kernels.
#include <string>

#include "kernels.hpp"
#include "scalar_math.hpp"

namespace goblin::reference::detail {
namespace {

template <class T> bool hasZero(const Tensor& tensor) {
    for (T value : tensor.values<T>())
        if (value == T{0})
            return true;
    return false;
}

bool isPredicate(OpCode op) {
    return op >= OpCode::Eq && op <= OpCode::LogicalXor;
}

template <class T> void binary(OpCode op, const Tensor& a, const Tensor& b, Tensor& out) {
    const auto offsetsA = broadcastOffsets(a.shape(), out.shape());
    const auto offsetsB = broadcastOffsets(b.shape(), out.shape());
    const auto va = a.values<T>();
    const auto vb = b.values<T>();
    for (std::size_t i = 0; i < offsetsA.size(); ++i) {
        const T x = va[static_cast<std::size_t>(offsetsA[i])];
        const T y = vb[static_cast<std::size_t>(offsetsB[i])];
        if (isPredicate(op))
            out.values<bool>()[i] = predicateOp(op, x, y);
        else
            out.values<T>()[i] = binaryOp(op, x, y);
    }
}

template <class T> void unary(OpCode op, const Tensor& x, Tensor& out, const Attributes& attrs) {
    const bool tanhGelu =
        core::ops::attrString(attrs, "approximate", std::string("none")).value_or("") == "tanh";
    const auto in = x.values<T>();
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (op == OpCode::LogicalNot)
            out.values<bool>()[i] = in[i] == T{0};
        else if (op == OpCode::IsNan)
            out.values<bool>()[i] = isNanValue(in[i]);
        else
            out.values<T>()[i] = unaryOp(op, in[i], tanhGelu);
    }
}

template <class T> void where(Args args, Tensor& out) {
    const auto offsetsC = broadcastOffsets(args[0].shape(), out.shape());
    const auto offsetsA = broadcastOffsets(args[1].shape(), out.shape());
    const auto offsetsB = broadcastOffsets(args[2].shape(), out.shape());
    const auto cond = args[0].values<bool>();
    for (std::size_t i = 0; i < offsetsC.size(); ++i)
        out.values<T>()[i] = cond[static_cast<std::size_t>(offsetsC[i])]
                                 ? args[1].values<T>()[static_cast<std::size_t>(offsetsA[i])]
                                 : args[2].values<T>()[static_cast<std::size_t>(offsetsB[i])];
}

// clamp(x, min, max) = min(max(x, lo), hi): NaN stays NaN; lo > hi gives hi.
template <class T> void clamp(const Tensor& x, Tensor& out, const Attributes& attrs) {
    const auto low = core::ops::attrOptionalNumber(attrs, "min").value_or(std::nullopt);
    const auto high = core::ops::attrOptionalNumber(attrs, "max").value_or(std::nullopt);
    const auto in = x.values<T>();
    for (std::size_t i = 0; i < in.size(); ++i) {
        T value = in[i];
        if (!isNanValue(value) && low && value < static_cast<T>(*low))
            value = static_cast<T>(*low);
        if (!isNanValue(value) && high && value > static_cast<T>(*high))
            value = static_cast<T>(*high);
        out.values<T>()[i] = value;
    }
}

} // namespace

Expected<Tensor> runElementwise(OpCode op, Args args, const Attributes& attrs,
                                const TensorSpec& spec) {
    auto out = Tensor::allocate(spec.dtype, spec.shape);
    if (!out)
        return out;
    const core::DType dtype = args[op == OpCode::Where ? 1 : 0].dtype();
    const bool integerDivision =
        (op == OpCode::FloorDivide || op == OpCode::Remainder) && !core::isFloatingPoint(dtype);
    // PyTorch raises on integer division by zero; so do we, before computing anything.
    if (integerDivision && visitDType(dtype, [&](auto t) { return hasZero<decltype(t)>(args[1]); }))
        return makeError(ErrorCode::InvalidInput,
                         std::string(core::ops::opInfo(op).name) + ": integer division by zero");
    visitDType(dtype, [&](auto t) {
        using T = decltype(t);
        if (op == OpCode::Where)
            where<T>(args, *out);
        else if (op == OpCode::Clamp)
            clamp<T>(args[0], *out, attrs);
        else if (args.size() == 2)
            binary<T>(op, args[0], args[1], *out);
        else
            unary<T>(op, args[0], *out, attrs);
    });
    return out;
}

} // namespace goblin::reference::detail
