#include "goblin/verify/output_agreement.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>

namespace goblin::verify {
namespace {

using core::DType;
using core::ops::OpCode;
using core::ops::TensorSpec;
using core::ops::ToleranceClass;

std::int64_t count(const core::Shape& shape) {
    return core::elementCount(shape).value_or(0);
}

// K of one node: the length of the longest reduction an output element of it depends on.
std::int64_t reducedLength(const core::graph::GraphNode& node,
                           const std::map<core::graph::ValueId, TensorSpec>& specs) {
    std::vector<const TensorSpec*> args;
    for (auto id : node.args)
        args.push_back(&specs.at(id));
    const TensorSpec& out = specs.at(node.id);
    switch (node.op) {
    case OpCode::Matmul:
        return args[0]->shape.empty() ? 1 : args[0]->shape.back();
    default:
        break;
    }
    std::int64_t largest = 1;
    for (const TensorSpec* arg : args)
        largest = std::max(largest, count(arg->shape));
    const std::int64_t outCount = std::max<std::int64_t>(1, count(out.shape));
    // Reductions shrink the output: K = inputs ÷ outputs. Ops that keep the shape (softmax,
    // cumsum, normalisations, convolutions) are bounded by the largest input.
    return largest > outCount ? std::max<std::int64_t>(1, largest / outCount) : largest;
}

double nodeBudget(const core::graph::GraphNode& node,
                  const std::map<core::graph::ValueId, TensorSpec>& specs) {
    const auto& tolerance = core::ops::opInfo(node.op).tolerance;
    const auto k = static_cast<double>(reducedLength(node, specs));
    switch (tolerance.cls) {
    case ToleranceClass::Exact:
        return 0;
    case ToleranceClass::Ulp:
        return tolerance.ulps + tolerance.ulpsPerReduced * k;
    case ToleranceClass::SumBound:
    case ToleranceClass::MatmulBound:
        return k + 2;
    }
    return 0;
}

template <class T> double maxAbs(std::span<const T> values) {
    double largest = 0;
    for (T v : values)
        if (std::isfinite(static_cast<double>(v)))
            largest = std::max(largest, std::abs(static_cast<double>(v)));
    return largest;
}

// The worst |Δ|/bound of one float output, or +inf at the first element out of bound.
template <class T>
double compareFloats(std::span<const T> a, std::span<const T> b, double budget, double u,
                     std::int64_t* where) {
    const double scale = std::max(maxAbs(a), maxAbs(b));
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double x = a[i], y = b[i];
        if (std::isnan(x) || std::isnan(y)) {
            if (std::isnan(x) && std::isnan(y))
                continue;
            *where = static_cast<std::int64_t>(i);
            return INFINITY;
        }
        if (x == y)
            continue;
        if (std::isinf(x) || std::isinf(y)) {
            *where = static_cast<std::int64_t>(i);
            return INFINITY;
        }
        const double bound = budget * u * (std::abs(x) + std::abs(y) + scale);
        const double ratio = bound > 0 ? std::abs(x - y) / bound : INFINITY;
        if (ratio > worst) {
            worst = ratio;
            *where = static_cast<std::int64_t>(i);
        }
        if (ratio > 1)
            return ratio;
    }
    return worst;
}

} // namespace

std::vector<OutputTolerance> outputTolerances(const core::graph::Graph& graph,
                                              const core::graph::GraphPlan& plan) {
    // An output's budget is the sum of its ancestors' own budgets, each ancestor counted once
    // however many paths lead from it to the output (summing per path grows exponentially with
    // the depth of a graph that reuses values, e.g. a backward pass). Ancestor sets are bitsets
    // over the nodes in plan order (at most GraphLimits::maxNodes = 10k: 12.5 MB, OR-ed by word).
    std::map<core::graph::ValueId, std::size_t> position;
    for (std::size_t at = 0; at < plan.order.size(); ++at)
        position[graph.nodes[plan.order[at]].id] = at;
    const std::size_t count = plan.order.size();
    const std::size_t words = (count + 63) / 64;
    std::vector<std::uint64_t> ancestors(count * words, 0);
    std::vector<double> own(count, 0);
    for (std::size_t at = 0; at < count; ++at) {
        const auto& node = graph.nodes[plan.order[at]];
        own[at] = nodeBudget(node, plan.specs);
        std::uint64_t* mine = ancestors.data() + at * words;
        mine[at / 64] |= std::uint64_t{1} << (at % 64);
        for (auto arg : node.args) {
            const auto found = position.find(arg);
            if (found == position.end())
                continue; // an input or a constant: exact
            const std::uint64_t* inherited = ancestors.data() + found->second * words;
            for (std::size_t w = 0; w < words; ++w)
                mine[w] |= inherited[w];
        }
    }
    std::vector<OutputTolerance> tolerances;
    for (auto id : graph.outputs) {
        double budget = 0; // an input or a constant given as an output is exact
        if (const auto found = position.find(id); found != position.end()) {
            const std::uint64_t* mine = ancestors.data() + found->second * words;
            for (std::size_t i = 0; i < count; ++i)
                if ((mine[i / 64] >> (i % 64)) & 1u)
                    budget += own[i];
        }
        tolerances.push_back({plan.specs.at(id), budget});
    }
    return tolerances;
}

Agreement compareOutputs(std::span<const OutputTolerance> tolerances,
                         std::span<const core::Tensor> first,
                         std::span<const core::Tensor> second) {
    Agreement agreement;
    if (first.size() != tolerances.size() || second.size() != tolerances.size()) {
        agreement.reason = "wrong number of outputs";
        agreement.worstRatio = INFINITY;
        return agreement;
    }
    for (std::size_t o = 0; o < tolerances.size(); ++o) {
        const OutputTolerance& tolerance = tolerances[o];
        const core::Tensor& a = first[o];
        const core::Tensor& b = second[o];
        for (const core::Tensor* t : {&a, &b}) {
            if (t->dtype() != tolerance.spec.dtype || t->shape() != tolerance.spec.shape) {
                agreement.reason = "output " + std::to_string(o) + " has the wrong dtype or shape";
                agreement.worstRatio = INFINITY;
                return agreement;
            }
        }
        std::int64_t where = -1;
        double ratio = 0;
        const bool exact = tolerance.budget == 0 || !core::isFloatingPoint(a.dtype());
        if (exact) {
            // Equal bytes are the common case of honest replicas: one memcmp decides it. Else
            // NaN still matches NaN and +0 matches −0.
            const bool sameBytes =
                a.byteSize() == 0 ||
                std::memcmp(a.bytes().data(), b.bytes().data(), a.byteSize()) == 0;
            bool same = sameBytes;
            if (!sameBytes && a.dtype() == DType::F32)
                same = compareFloats(a.values<float>(), b.values<float>(), 0, 0, &where) == 0;
            else if (!sameBytes && a.dtype() == DType::F64)
                same = compareFloats(a.values<double>(), b.values<double>(), 0, 0, &where) == 0;
            ratio = same ? 0 : INFINITY;
        } else if (a.dtype() == DType::F32) {
            ratio = compareFloats(a.values<float>(), b.values<float>(), tolerance.budget,
                                  std::ldexp(1.0, -24), &where);
        } else {
            ratio = compareFloats(a.values<double>(), b.values<double>(), tolerance.budget,
                                  std::ldexp(1.0, -53), &where);
        }
        agreement.worstRatio = std::max(agreement.worstRatio, ratio);
        if (ratio > 1) {
            agreement.reason =
                "output " + std::to_string(o) + " differs" +
                (where >= 0 ? " at element " + std::to_string(where) : std::string()) +
                (std::isfinite(ratio) ? " by " + std::to_string(ratio) + "× its bound"
                                      : std::string(exact ? " (must match bit for bit)" : ""));
            return agreement;
        }
    }
    agreement.agree = true;
    return agreement;
}

} // namespace goblin::verify
