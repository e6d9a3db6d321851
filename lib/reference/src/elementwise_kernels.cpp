// Reference kernels of the elementwise ops (unary, binary with broadcasting, where, clamp); the
// per-element math is kernels/goblin_math.h, shared with the OpenCL kernels.
#include <algorithm>
#include <string>
#include <vector>

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

// An operand read along rows of the output's last dim: where each row starts in the operand and
// its step along the row (0 where it broadcasts), so only one offset per row is materialised.
struct RowWalk {
    std::vector<std::int64_t> rowStarts;
    std::int64_t step = 0;
    std::int64_t width = 1;
};

RowWalk walkOf(const core::Shape& in, const core::Shape& out) {
    RowWalk walk;
    walk.width = out.empty() ? 1 : out.back();
    if (in.empty()) { // a scalar: every element reads offset 0
        walk.rowStarts =
            broadcastOffsets({}, core::Shape(out.begin(), out.end() - (out.empty() ? 0 : 1)));
        std::fill(walk.rowStarts.begin(), walk.rowStarts.end(), 0);
        return walk;
    }
    const std::int64_t inWidth = in.back();
    walk.step = inWidth == 1 ? 0 : 1;
    walk.rowStarts = broadcastOffsets(core::Shape(in.begin(), in.end() - 1),
                                      core::Shape(out.begin(), out.end() - 1));
    for (std::int64_t& start : walk.rowStarts)
        start *= inWidth;
    return walk;
}

template <class T> void binary(OpCode op, const Tensor& a, const Tensor& b, Tensor& out) {
    const RowWalk wa = walkOf(a.shape(), out.shape()), wb = walkOf(b.shape(), out.shape());
    const T* va = a.values<T>().data();
    const T* vb = b.values<T>().data();
    const bool predicate = isPredicate(op);
    bool* flags = predicate ? out.values<bool>().data() : nullptr;
    T* values = predicate ? nullptr : out.values<T>().data();
    std::size_t i = 0;
    for (std::size_t row = 0; row < wa.rowStarts.size(); ++row) {
        const T* pa = va + wa.rowStarts[row];
        const T* pb = vb + wb.rowStarts[row];
        for (std::int64_t j = 0; j < wa.width; ++j, ++i) {
            const T x = pa[j * wa.step], y = pb[j * wb.step];
            if (predicate)
                flags[i] = predicateOp(op, x, y);
            else
                values[i] = binaryOp(op, x, y);
        }
    }
}

template <class T> void unary(OpCode op, const Tensor& x, Tensor& out, const Attributes& attrs) {
    const bool tanhGelu =
        core::ops::attrString(attrs, "approximate", std::string("none")).value_or("") == "tanh";
    const auto in = x.values<T>();
    if (op == OpCode::LogicalNot || op == OpCode::IsNan) {
        const auto flags = out.values<bool>();
        for (std::size_t i = 0; i < in.size(); ++i)
            flags[i] = op == OpCode::LogicalNot ? in[i] == T{0} : isNanValue(in[i]);
        return;
    }
    const auto values = out.values<T>();
    if (op == OpCode::Relu) { // the commonest op, its switch resolved once: the loop vectorises
        for (std::size_t i = 0; i < in.size(); ++i)
            values[i] = unaryOp(OpCode::Relu, in[i], false);
        return;
    }
    for (std::size_t i = 0; i < in.size(); ++i)
        values[i] = unaryOp(op, in[i], tanhGelu);
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
