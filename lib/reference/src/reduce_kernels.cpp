// Reference kernels of reductions, arg-reductions, cumsum and softmax: every reduction accumulates
// sequentially in C order of the reduced elements, in the output dtype (a fixed order, so repeated
// runs and a sequential OpenCL kernel agree bit for bit).
#include <cmath>
#include <limits>

#include "batch_math.hpp"
#include "kernels.hpp"
#include "scalar_math.hpp"

namespace goblin::reference::detail {
namespace {

using core::ops::IntList;

IntList dimsOf(const Attributes& attrs, std::size_t rank) {
    IntList dims = core::ops::attrIntList(attrs, "dims", IntList{}).value_or(IntList{});
    if (dims.empty())
        for (std::size_t i = 0; i < rank; ++i)
            dims.push_back(static_cast<std::int64_t>(i));
    for (std::int64_t& dim : dims)
        dim = dim < 0 ? dim + static_cast<std::int64_t>(rank) : dim;
    return dims;
}

// Along one dim (argmax, cumsum, softmax): all dims when "dim" is absent (argmax of the flat
// tensor).
IntList lineDim(const Attributes& attrs, std::size_t rank) {
    auto dim = core::ops::attrInt(attrs, "dim", std::nullopt);
    if (!dim)
        return dimsOf({}, rank);
    if (rank == 0)
        return {};
    return {*dim < 0 ? *dim + static_cast<std::int64_t>(rank) : *dim};
}

template <class T, class A>
void reduce(OpCode op, const Tensor& x, const ReductionIndex& index, Tensor& out,
            std::int64_t correction) {
    const auto in = x.values<T>();
    auto result = out.values<A>();
    const auto n = static_cast<A>(index.members.size());
    for (std::size_t o = 0; o < index.bases.size(); ++o) {
        auto at = [&](std::size_t j) {
            return static_cast<A>(in[static_cast<std::size_t>(index.bases[o] + index.members[j])]);
        };
        A acc = op == OpCode::Prod ? A{1} : A{0};
        if (op == OpCode::Amax || op == OpCode::Amin)
            acc = at(0);
        for (std::size_t j = 0; j < index.members.size(); ++j) {
            const A v = at(j);
            if constexpr (kIsInt<A>) {
                acc = op == OpCode::Prod   ? wrapMul(acc, v)
                      : op == OpCode::Amax ? nanMax(acc, v)
                      : op == OpCode::Amin ? nanMin(acc, v)
                                           : wrapAdd(acc, v);
            } else {
                acc = op == OpCode::Prod   ? acc * v
                      : op == OpCode::Amax ? nanMax(acc, v)
                      : op == OpCode::Amin ? nanMin(acc, v)
                                           : acc + v;
            }
        }
        if constexpr (std::is_floating_point_v<A>) {
            if (op == OpCode::Mean)
                acc = acc / n;
            if (op == OpCode::Var) {
                // Two passes: the mean, then squared deviations (no E[x²]−E[x]² cancellation).
                const A mean = acc / n;
                A squares = 0;
                for (std::size_t j = 0; j < index.members.size(); ++j)
                    squares += (at(j) - mean) * (at(j) - mean);
                const auto divisor = static_cast<A>(std::max<std::int64_t>(
                    static_cast<std::int64_t>(index.members.size()) - correction, 0));
                acc = squares / divisor;
            }
        }
        result[o] = acc;
    }
}

// First index of the extreme; a NaN counts as the extreme (first NaN wins), as in PyTorch.
template <class T>
void argReduce(OpCode op, const Tensor& x, const ReductionIndex& index, Tensor& out) {
    const auto in = x.values<T>();
    for (std::size_t o = 0; o < index.bases.size(); ++o) {
        std::size_t best = 0;
        T bestValue = in[static_cast<std::size_t>(index.bases[o] + index.members[0])];
        for (std::size_t j = 1; j < index.members.size() && !isNanValue(bestValue); ++j) {
            const T v = in[static_cast<std::size_t>(index.bases[o] + index.members[j])];
            const bool better =
                isNanValue(v) || (op == OpCode::Argmax ? v > bestValue : v < bestValue);
            if (better) {
                best = j;
                bestValue = v;
            }
        }
        out.values<std::int64_t>()[o] = static_cast<std::int64_t>(best);
    }
}

template <class T, class A>
void alongLines(OpCode op, const Tensor& x, const ReductionIndex& index, Tensor& out) {
    const auto in = x.values<T>();
    auto result = out.values<A>();
    std::vector<A> exps;
    for (std::int64_t base : index.bases) {
        auto at = [&](std::int64_t member) { return static_cast<std::size_t>(base + member); };
        if (op == OpCode::Cumsum) {
            A acc{0};
            for (std::int64_t member : index.members) {
                if constexpr (kIsInt<A>)
                    acc = wrapAdd(acc, static_cast<A>(in[at(member)]));
                else
                    acc = acc + static_cast<A>(in[at(member)]);
                result[at(member)] = acc;
            }
            continue;
        }
        if constexpr (std::is_floating_point_v<A>) {
            // max-subtracted; a NaN anywhere in the line makes the line NaN.
            A top = -std::numeric_limits<A>::infinity();
            for (std::int64_t member : index.members)
                top = nanMax(top, in[at(member)]);
            // The line's exps, batched (batch_math: the scalar function's bits), then summed in
            // the line's order.
            exps.resize(index.members.size());
            for (std::size_t j = 0; j < exps.size(); ++j)
                exps[j] = in[at(index.members[j])] - top;
            batchUnary(BatchOp::Exp, exps.data(), exps.data(), exps.size());
            A total = 0;
            for (A e : exps)
                total += e;
            if (op == OpCode::Softmax) {
                for (std::size_t j = 0; j < exps.size(); ++j)
                    result[at(index.members[j])] = exps[j] / total;
                continue;
            }
            const A logTotal = mathLog(total);
            for (std::int64_t member : index.members)
                result[at(member)] = in[at(member)] - top - logTotal;
        }
    }
}

} // namespace

Expected<Tensor> runReduction(OpCode op, Args args, const Attributes& attrs,
                              const TensorSpec& spec) {
    auto out = Tensor::allocate(spec.dtype, spec.shape);
    if (!out)
        return out;
    const Tensor& x = args[0];
    const std::size_t rank = x.shape().size();
    const bool perLine = op == OpCode::Argmax || op == OpCode::Argmin || op == OpCode::Cumsum ||
                         op == OpCode::Softmax || op == OpCode::LogSoftmax;
    const IntList dims = perLine ? lineDim(attrs, rank) : dimsOf(attrs, rank);
    const ReductionIndex index = reductionIndex(x.shape(), dims);
    const std::int64_t correction = core::ops::attrInt(attrs, "correction", 1).value_or(1);
    visitDType(x.dtype(), [&](auto t) {
        using T = decltype(t);
        if constexpr (!std::is_same_v<T, bool>) {
            using A = std::conditional_t<std::is_same_v<T, std::int32_t>, std::int64_t, T>;
            const bool widened = spec.dtype != x.dtype();
            if (op == OpCode::Argmax || op == OpCode::Argmin)
                argReduce<T>(op, x, index, *out);
            else if (perLine)
                widened ? alongLines<T, A>(op, x, index, *out)
                        : alongLines<T, T>(op, x, index, *out);
            else
                widened ? reduce<T, A>(op, x, index, *out, correction)
                        : reduce<T, T>(op, x, index, *out, correction);
        }
    });
    return out;
}

} // namespace goblin::reference::detail
