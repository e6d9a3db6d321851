// Reference kernels of the elementwise ops (unary, binary with broadcasting, where, clamp); the
// per-element math is kernels/goblin_math.h, shared with the OpenCL kernels.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "batch_math.hpp"
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

// The rows of a binary op, f called on each pair of elements. A template, so that a constant op
// folds into the loop, which then vectorises where both operands step along the row.
template <class T, class R, class F>
void binaryRows(const RowWalk& wa, const RowWalk& wb, const T* va, const T* vb, R* out, F f) {
    for (std::size_t row = 0; row < wa.rowStarts.size(); ++row) {
        const T* pa = va + wa.rowStarts[row];
        const T* pb = vb + wb.rowStarts[row];
        if (wa.step == 1 && wb.step == 1) {
            for (std::int64_t j = 0; j < wa.width; ++j)
                out[j] = f(pa[j], pb[j]);
        } else if (wa.step == 1 && wb.step == 0) { // one value of b per row (x / sum, x · scale)
            const T b = *pb;
            for (std::int64_t j = 0; j < wa.width; ++j)
                out[j] = f(pa[j], b);
        } else if (wa.step == 0 && wb.step == 1) {
            const T a = *pa;
            for (std::int64_t j = 0; j < wa.width; ++j)
                out[j] = f(a, pb[j]);
        } else {
            for (std::int64_t j = 0; j < wa.width; ++j)
                out[j] = f(pa[j * wa.step], pb[j * wb.step]);
        }
        out += wa.width;
    }
}

template <class T> void binary(OpCode op, const Tensor& a, const Tensor& b, Tensor& out) {
    const RowWalk wa = broadcastWalk(a.shape(), out.shape());
    const RowWalk wb = broadcastWalk(b.shape(), out.shape());
    const T* va = a.values<T>().data();
    const T* vb = b.values<T>().data();
    if (isPredicate(op))
        return binaryRows(wa, wb, va, vb, out.values<bool>().data(),
                          [op](T x, T y) { return predicateOp(op, x, y); });
    T* values = out.values<T>().data();
    // The commonest ops with the op a constant: the same scalar code, its switch resolved once.
    const auto withConstant = [&](auto constant) {
        binaryRows(wa, wb, va, vb, values,
                   [](T x, T y) { return binaryOp(decltype(constant)::value, x, y); });
    };
    switch (op) {
    case OpCode::Add:
        return withConstant(std::integral_constant<OpCode, OpCode::Add>{});
    case OpCode::Sub:
        return withConstant(std::integral_constant<OpCode, OpCode::Sub>{});
    case OpCode::Mul:
        return withConstant(std::integral_constant<OpCode, OpCode::Mul>{});
    case OpCode::Div:
        return withConstant(std::integral_constant<OpCode, OpCode::Div>{});
    default:
        return binaryRows(wa, wb, va, vb, values, [op](T x, T y) { return binaryOp(op, x, y); });
    }
}

// The transcendental ops that batch_math computes over whole arrays (same bits).
std::optional<BatchOp> batchOpOf(OpCode op, bool tanhGelu) {
    switch (op) {
    case OpCode::Exp:
        return BatchOp::Exp;
    case OpCode::Erf:
        return BatchOp::Erf;
    case OpCode::Tanh:
        return BatchOp::Tanh;
    case OpCode::Sigmoid:
        return BatchOp::Sigmoid;
    case OpCode::Gelu:
        return tanhGelu ? BatchOp::GeluTanh : BatchOp::Gelu;
    default:
        return std::nullopt;
    }
}

template <class T> void unary(OpCode op, const Tensor& x, Tensor& out, const Attributes& attrs) {
    const bool tanhGelu =
        core::ops::attrString(attrs, "approximate", std::string("none")).value_or("") == "tanh";
    const auto in = x.values<T>();
    if constexpr (std::is_floating_point_v<T>) {
        if (const auto batchOp = batchOpOf(op, tanhGelu))
            return batchUnary(*batchOp, in.data(), out.values<T>().data(), in.size());
    }
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

// cond ? a : b by masking the bits, without a branch: a relu gradient's mask is as good as random,
// and a branch per element mispredicts half the time.
template <class T> T select(bool cond, T a, T b) {
    using Bits = std::conditional_t<
        sizeof(T) == 1, std::uint8_t,
        std::conditional_t<sizeof(T) == 2, std::uint16_t,
                           std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;
    static_assert(sizeof(Bits) == sizeof(T));
    const Bits mask = static_cast<Bits>(Bits{0} - static_cast<Bits>(cond));
    return std::bit_cast<T>(
        static_cast<Bits>((std::bit_cast<Bits>(a) & mask) | (std::bit_cast<Bits>(b) & ~mask)));
}

// A row of where() whose condition runs along the row and whose values run along it or stay
// (steps 1 or 0, known at compile time): it vectorises.
template <class T, int StepA, int StepB>
void whereRow(const bool* pc, const T* pa, const T* pb, std::int64_t width, T* values) {
    for (std::int64_t j = 0; j < width; ++j)
        values[j] = select(pc[j], pa[j * StepA], pb[j * StepB]);
}

template <class T> void where(Args args, Tensor& out) {
    const RowWalk wc = broadcastWalk(args[0].shape(), out.shape());
    const RowWalk wa = broadcastWalk(args[1].shape(), out.shape());
    const RowWalk wb = broadcastWalk(args[2].shape(), out.shape());
    const bool* cond = args[0].values<bool>().data();
    const T* va = args[1].values<T>().data();
    const T* vb = args[2].values<T>().data();
    T* values = out.values<T>().data();
    const auto unitOrZero = [](std::int64_t step) { return step == 0 || step == 1; };
    const bool fast = wc.step == 1 && unitOrZero(wa.step) && unitOrZero(wb.step);
    const auto row = fast ? (wa.step == 1 ? (wb.step == 1 ? whereRow<T, 1, 1> : whereRow<T, 1, 0>)
                                          : (wb.step == 1 ? whereRow<T, 0, 1> : whereRow<T, 0, 0>))
                          : nullptr;
    for (std::size_t r = 0; r < wc.rowStarts.size(); ++r, values += wc.width) {
        const bool* pc = cond + wc.rowStarts[r];
        const T* pa = va + wa.rowStarts[r];
        const T* pb = vb + wb.rowStarts[r];
        if (row) {
            row(pc, pa, pb, wc.width, values);
            continue;
        }
        for (std::int64_t j = 0; j < wc.width; ++j)
            values[j] = select(pc[j * wc.step], pa[j * wa.step], pb[j * wb.step]);
    }
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
