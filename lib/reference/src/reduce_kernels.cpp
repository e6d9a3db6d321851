// Reference kernels of reductions, arg-reductions, cumsum and softmax: every reduction accumulates
// sequentially in C order of the reduced elements, in the output dtype (a fixed order, so repeated
// runs and a sequential OpenCL kernel agree bit for bit).
#include <algorithm>
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

// Combines each output's elements in order, `combine(acc, element)`, from `start` (Amax/Amin: from
// the first element). Outputs whose elements sit next to each other in the input (the kept dims
// last) advance together one reduced element at a time: a pass reads the input in memory order
// and the loop vectorises across outputs. Others go eight at a time, eight independent chains.
// Either way each output's own chain is the sequential one, so the bits are.
template <class T, class A, class Combine>
void combineInOrder(const T* in, const ReductionIndex& index, A* result, A start, bool fromFirst,
                    Combine combine) {
    constexpr std::size_t kChains = 8;
    const std::size_t outputs = index.bases.size(), count = index.members.size();
    const std::int64_t* bases = index.bases.data();
    const std::int64_t* members = index.members.data();
    const auto first = [&](std::size_t o) {
        return fromFirst ? static_cast<A>(in[bases[o] + members[0]]) : start;
    };
    for (std::size_t o = 0; o < outputs;) {
        std::size_t run = 1;
        while (o + run < outputs && bases[o + run] == bases[o] + static_cast<std::int64_t>(run))
            ++run;
        if (run >= kChains) {
            A* acc = result + o;
            for (std::size_t i = 0; i < run; ++i)
                acc[i] = first(o + i);
            for (std::size_t j = 0; j < count; ++j) {
                const T* row = in + bases[o] + members[j];
                for (std::size_t i = 0; i < run; ++i)
                    acc[i] = combine(acc[i], static_cast<A>(row[i]));
            }
            o += run;
            continue;
        }
        // A full group's width is a constant, so its chains stay in registers.
        const auto chainsOf = [&](auto chains) {
            A acc[kChains];
            for (std::size_t g = 0; g < chains; ++g)
                acc[g] = first(o + g);
            for (std::size_t j = 0; j < count; ++j)
                for (std::size_t g = 0; g < chains; ++g)
                    acc[g] = combine(acc[g], static_cast<A>(in[bases[o + g] + members[j]]));
            std::copy_n(acc, chains, result + o);
            o += chains;
        };
        if (outputs - o >= kChains)
            chainsOf(std::integral_constant<std::size_t, kChains>{});
        else
            chainsOf(outputs - o);
    }
}

// The reduction's step in the dtype: integers wrap (docs/ops.md), extremes let a NaN win.
template <class T, class A>
void combineAll(OpCode op, const T* in, const ReductionIndex& index, A* result) {
    const auto with = [&](A start, bool fromFirst, auto combine) {
        combineInOrder(in, index, result, start, fromFirst, combine);
    };
    switch (op) {
    case OpCode::Prod:
        return with(A{1}, false, [](A acc, A v) {
            if constexpr (kIsInt<A>)
                return wrapMul(acc, v);
            else
                return acc * v;
        });
    case OpCode::Amax:
        return with(A{0}, true, [](A acc, A v) { return nanMax(acc, v); });
    case OpCode::Amin:
        return with(A{0}, true, [](A acc, A v) { return nanMin(acc, v); });
    default:
        return with(A{0}, false, [](A acc, A v) {
            if constexpr (kIsInt<A>)
                return wrapAdd(acc, v);
            else
                return acc + v;
        });
    }
}

template <class T, class A>
void reduce(OpCode op, const Tensor& x, const ReductionIndex& index, Tensor& out,
            std::int64_t correction) {
    const auto in = x.values<T>();
    auto result = out.values<A>();
    const auto n = static_cast<A>(index.members.size());
    // Sums (Var: its mean's), products and extremes; an empty reduction leaves the start.
    combineAll<T, A>(op == OpCode::Var ? OpCode::Sum : op, in.data(), index, result.data());
    if constexpr (std::is_floating_point_v<A>) {
        if (op == OpCode::Mean)
            for (A& value : result)
                value = value / n;
        if (op == OpCode::Var) {
            const auto divisor = static_cast<A>(std::max<std::int64_t>(
                static_cast<std::int64_t>(index.members.size()) - correction, 0));
            for (std::size_t o = 0; o < index.bases.size(); ++o) {
                // Two passes: the mean, then squared deviations (no E[x²]−E[x]² cancellation).
                const A mean = result[o] / n;
                A squares = 0;
                for (std::int64_t member : index.members) {
                    const auto deviation =
                        static_cast<A>(in[static_cast<std::size_t>(index.bases[o] + member)]) -
                        mean;
                    squares += deviation * deviation;
                }
                result[o] = squares / divisor;
            }
        }
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

// Softmax and log_softmax of lines whose members lie next to each other (along the last dim),
// eight lines at a time: each line's max, exps, sum and quotients are its own, in its own order, as
// alongLines computes them one line at a time (so the bits are), but eight chains advance together
// and the eight lines' exps go to batch_math in one call.
template <class T, class A>
void softmaxOfAdjacentLines(OpCode op, const T* in, const ReductionIndex& index, A* result) {
    constexpr std::size_t kLines = 8;
    const std::size_t length = index.members.size();
    std::vector<A> buffer(kLines * length);
    A* const exps = buffer.data(); // raw: a hardened build checks every operator[]
    // nanMax written as selects, without its branches (which the data decide).
    const auto largerOrNan = [](A a, A b) {
        const A larger = a > b ? a : b;
        const A unlessB = b != b ? b : larger;
        return a != a ? a : unlessB;
    };
    // A full group's width is a constant, so that its chains stay in registers.
    const auto group = [&](std::size_t o, auto lines) {
        const T* line[kLines];
        A top[kLines];
        A total[kLines];
        for (std::size_t g = 0; g < lines; ++g) {
            line[g] = in + index.bases[o + g];
            top[g] = -std::numeric_limits<A>::infinity();
            total[g] = 0;
        }
        for (std::size_t j = 0; j < length; ++j)
            for (std::size_t g = 0; g < lines; ++g)
                top[g] = largerOrNan(top[g], static_cast<A>(line[g][j]));
        for (std::size_t g = 0; g < lines; ++g)
            for (std::size_t j = 0; j < length; ++j)
                exps[g * length + j] = line[g][j] - top[g];
        batchUnary(BatchOp::Exp, exps, exps, lines * length);
        for (std::size_t j = 0; j < length; ++j)
            for (std::size_t g = 0; g < lines; ++g)
                total[g] += exps[g * length + j];
        for (std::size_t g = 0; g < lines; ++g) {
            const A* lineExps = exps + g * length;
            A* written = result + index.bases[o + g];
            if (op == OpCode::Softmax) {
                for (std::size_t j = 0; j < length; ++j)
                    written[j] = lineExps[j] / total[g];
                continue;
            }
            const A logTotal = mathLog(total[g]);
            for (std::size_t j = 0; j < length; ++j)
                written[j] = line[g][j] - top[g] - logTotal;
        }
    };
    std::size_t o = 0;
    for (; o + kLines <= index.bases.size(); o += kLines)
        group(o, std::integral_constant<std::size_t, kLines>{});
    if (o < index.bases.size())
        group(o, index.bases.size() - o);
}

bool membersAdjacent(const ReductionIndex& index) {
    for (std::size_t j = 0; j < index.members.size(); ++j)
        if (index.members[j] != static_cast<std::int64_t>(j))
            return false;
    return true;
}

template <class T, class A>
void alongLines(OpCode op, const Tensor& x, const ReductionIndex& index, Tensor& out) {
    const auto in = x.values<T>();
    auto result = out.values<A>();
    if constexpr (std::is_floating_point_v<A>)
        if (op != OpCode::Cumsum && membersAdjacent(index))
            return softmaxOfAdjacentLines<T, A>(op, in.data(), index, result.data());
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
