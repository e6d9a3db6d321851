#include "cheap_audit.hpp"

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <vector>

#include "goblin/reference/graph_executor.hpp"
#include "goblin/verify/output_agreement.hpp"
#include "graph_witnesses.hpp"

namespace goblin::labnode {
namespace {

using core::MatrixView;
using core::Tensor;
using core::graph::ValueId;

// Bit for bit as replicas are compared: NaN matches NaN, +0 matches −0.
bool bitwiseEqual(const Tensor& left, const Tensor& right) {
    const verify::OutputTolerance exact{{left.dtype(), left.shape()}, 0.0};
    if (right.dtype() != left.dtype() || right.shape() != left.shape())
        return false;
    return verify::compareOutputs(std::span(&exact, 1), std::span(&left, 1), std::span(&right, 1))
        .agree;
}

// Row-major offsets of a matmul's batch matrices: batch index t of the output reads A's and B's
// matrices at these indices (batch dims broadcast, numpy-style).
std::int64_t broadcastIndex(const core::Shape& operand, const core::Shape& out, std::int64_t t) {
    const std::size_t outBatch = out.size() - 2, batch = operand.size() - 2;
    std::int64_t index = 0, stride = 1;
    for (std::size_t d = 0; d < outBatch; ++d) {
        const std::size_t fromEnd = d; // dims counted from the last batch dim
        const std::int64_t outDim = out[outBatch - 1 - fromEnd];
        const std::int64_t position = t % outDim;
        t /= outDim;
        if (fromEnd >= batch)
            continue;
        const std::int64_t dim = operand[batch - 1 - fromEnd];
        index += (dim == 1 ? 0 : position) * stride;
        stride *= dim;
    }
    return index;
}

MatrixView matrixOf(const Tensor& tensor, std::int64_t index) {
    const core::Shape& shape = tensor.shape();
    const std::int64_t rows = shape[shape.size() - 2], cols = shape.back();
    const auto offset =
        static_cast<std::size_t>(index * rows * cols) * core::itemSize(tensor.dtype());
    return MatrixView{tensor.dtype(), tensor.bytes().data() + offset, rows, cols, cols};
}

bool anyNonFinite(const MatrixView& view) {
    return view.rows > 0 && view.cols > 0 && verify::findNonFinite(view).has_value();
}

enum class HeavyCheck { Accepted, NeedsRecompute, Rejected };

// Freivalds on every batch matrix of a claimed matmul value.
HeavyCheck checkClaimedMatmul(const Tensor& a, const Tensor& b, const Tensor& c,
                              const verify::MatmulCheckOptions& options, core::RandomSource& random,
                              CheapAuditReport& report) {
    const core::Shape& out = c.shape();
    const std::int64_t k = a.shape().back();
    if (c.elementCount() == 0)
        return HeavyCheck::Accepted;
    if (k == 0)
        return HeavyCheck::NeedsRecompute;
    std::int64_t matrices = 1;
    for (std::size_t d = 0; d + 2 < out.size(); ++d)
        matrices *= out[d];
    double worst = 0.0;
    for (std::int64_t t = 0; t < matrices; ++t) {
        const MatrixView av = matrixOf(a, broadcastIndex(a.shape(), out, t));
        const MatrixView bv = matrixOf(b, broadcastIndex(b.shape(), out, t));
        const MatrixView cv = matrixOf(c, t);
        // Honest values may overflow or carry NaN; the gates of the check would reject them.
        if (anyNonFinite(av) || anyNonFinite(bv) || anyNonFinite(cv))
            return HeavyCheck::NeedsRecompute;
        const verify::MatmulCheckReport check =
            verify::checkMatmulTile(av, bv, cv, options, random);
        if (check.verdict == verify::Verdict::Escalate)
            return HeavyCheck::NeedsRecompute;
        if (check.verdict == verify::Verdict::Rejected) {
            report.reason = "batch matrix " + std::to_string(t) + ": " + check.reason;
            return HeavyCheck::Rejected;
        }
        worst = std::max(worst, check.maxErrorRatio);
    }
    report.maxErrorRatio = std::max(report.maxErrorRatio, worst);
    return HeavyCheck::Accepted;
}

struct Evaluation {
    std::map<ValueId, Tensor> values;
    std::map<ValueId, std::size_t> claimedAt; // a value's first position in graph.outputs
};

// One node: runOp, or the claimed value checked. Returns a failure reason, if any.
std::optional<std::string>
evaluateNode(const core::graph::GraphNode& node, const core::graph::GraphPlan& plan,
             std::span<const Tensor> claimed, const verify::MatmulCheckOptions& options,
             core::RandomSource& random, Evaluation& evaluation, CheapAuditReport& report) {
    std::vector<Tensor> args;
    for (ValueId arg : node.args)
        args.push_back(evaluation.values.at(arg));
    const std::string name = "node " + std::to_string(node.id);
    const auto at = evaluation.claimedAt.find(node.id);
    const bool heavy = isHeavyNode(node, plan);
    if (heavy && at != evaluation.claimedAt.end()) {
        const Tensor& claim = claimed[at->second];
        switch (checkClaimedMatmul(args[0], args[1], claim, options, random, report)) {
        case HeavyCheck::Accepted:
            ++report.checked;
            evaluation.values[node.id] = claim;
            return std::nullopt;
        case HeavyCheck::Rejected:
            return name + " (matmul): " + report.reason;
        case HeavyCheck::NeedsRecompute:
            break;
        }
    }
    auto value = reference::runOp(node.op, args, node.attrs);
    if (!value)
        return name + ": " + value.error().message;
    if (heavy) {
        ++report.recomputed;
        if (at != evaluation.claimedAt.end() && !bitwiseEqual(*value, claimed[at->second]))
            return name + " (matmul, recomputed) differs from the claimed value";
    }
    evaluation.values[node.id] = std::move(*value);
    return std::nullopt;
}

CheapAuditReport audit(const core::graph::Graph& graph, const core::graph::GraphPlan& plan,
                       std::span<const Tensor> inputs, std::span<const Tensor> claimed,
                       const verify::MatmulCheckOptions& options, core::RandomSource& random) {
    CheapAuditReport report;
    if (inputs.size() != graph.inputs.size() || claimed.size() != graph.outputs.size()) {
        report.reason = "wrong number of inputs or claimed outputs";
        return report;
    }
    Evaluation evaluation;
    for (std::size_t o = 0; o < graph.outputs.size(); ++o) {
        const core::ops::TensorSpec& spec = plan.specs.at(graph.outputs[o]);
        if (claimed[o].dtype() != spec.dtype || claimed[o].shape() != spec.shape) {
            report.reason = "output " + std::to_string(o) + " has the wrong dtype or shape";
            return report;
        }
        evaluation.claimedAt.emplace(graph.outputs[o], o);
    }
    for (std::size_t i = 0; i < inputs.size(); ++i)
        evaluation.values[graph.inputs[i].id] = inputs[i];
    for (const auto& constant : graph.constants)
        evaluation.values[constant.id] = constant.value;
    for (std::size_t index : plan.order)
        if (auto failure = evaluateNode(graph.nodes[index], plan, claimed, options, random,
                                        evaluation, report)) {
            report.reason = *failure;
            return report;
        }
    // Every output must be what the node now holds: recomputed values and, for a value listed
    // twice, the claim it used.
    for (std::size_t o = 0; o < graph.outputs.size(); ++o)
        if (!bitwiseEqual(evaluation.values.at(graph.outputs[o]), claimed[o])) {
            report.reason = "output " + std::to_string(o) + " (value " +
                            std::to_string(graph.outputs[o]) +
                            ") differs from the node's evaluation";
            return report;
        }
    report.passed = true;
    char summary[160];
    std::snprintf(summary, sizeof summary,
                  "cheap audit: %zu matmul node(s) checked by Freivalds (worst element error %.3g "
                  "of its bound), %zu recomputed, the rest recomputed bit for bit",
                  report.checked, report.maxErrorRatio, report.recomputed);
    report.reason = summary;
    return report;
}

} // namespace

CheapAuditReport runCheapAudit(const core::graph::Graph& graph, const core::graph::GraphPlan& plan,
                               std::span<const core::Tensor> inputs,
                               std::span<const core::Tensor> claimed,
                               const verify::MatmulCheckOptions& options,
                               core::RandomSource& random) {
    const auto start = std::chrono::steady_clock::now();
    CheapAuditReport report = audit(graph, plan, inputs, claimed, options, random);
    report.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return report;
}

} // namespace goblin::labnode
