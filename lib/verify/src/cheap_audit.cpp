#include "goblin/verify/cheap_audit.hpp"

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "goblin/core/ops/op_catalog.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "goblin/verify/conv_check.hpp"
#include "goblin/verify/graph_witnesses.hpp"
#include "goblin/verify/output_agreement.hpp"

namespace goblin::verify {
namespace {

using core::MatrixView;
using core::Tensor;
using core::graph::ValueId;

// Bit for bit as replicas are compared: NaN matches NaN, +0 matches −0.
bool bitwiseEqual(const Tensor& left, const Tensor& right) {
    const OutputTolerance exact{{left.dtype(), left.shape()}, 0.0};
    if (right.dtype() != left.dtype() || right.shape() != left.shape())
        return false;
    return compareOutputs(std::span(&exact, 1), std::span(&left, 1), std::span(&right, 1)).agree;
}

bool anyNonFinite(const MatrixView& view) {
    return view.rows > 0 && view.cols > 0 && findNonFinite(view).has_value();
}

enum class HeavyCheck { Accepted, NeedsRecompute, Rejected };

// How claimed matmul values are checked: fresh vectors per audit, or the job's shared probe when
// B is a graph input or constant (weights: often the very same tensor in every task of the job).
struct Checker {
    const MatmulCheckOptions& options;
    core::RandomSource& random;
    AuditProbes* probes = nullptr;
    GreyZone greyZone = GreyZone::RecomputeBitwise;
    bool heldB = false; // B is an input or a constant

    // The shared probe of B's batch matrix, or null (none shared, or B not finite).
    std::shared_ptr<const ColumnProbe> sharedProbe(const MatrixView& b) const {
        if (probes == nullptr || !heldB)
            return nullptr;
        return probes->probeFor(b, options, random);
    }
};

// Freivalds on every batch matrix of a claimed matmul value.
HeavyCheck checkClaimedMatmul(const Tensor& a, const Tensor& b, const Tensor& c,
                              const Checker& checker, CheapAuditReport& report) {
    const core::Shape& out = c.shape();
    const std::int64_t k = a.shape().back();
    if (c.elementCount() == 0)
        return HeavyCheck::Accepted;
    // Canonical values (replicas) of a short product: recomputed and compared bit for bit, which
    // is cheaper there and exact.
    if (k == 0 || (checker.greyZone == GreyZone::RecomputeBitwise && k < kMinCheckedCanonicalInner))
        return HeavyCheck::NeedsRecompute;
    const std::int64_t matrices = core::batchMatrixCount(out);
    double worst = 0.0;
    for (std::int64_t t = 0; t < matrices; ++t) {
        const MatrixView av = core::batchMatrix(a, core::broadcastMatrixIndex(a.shape(), out, t));
        const MatrixView bv = core::batchMatrix(b, core::broadcastMatrixIndex(b.shape(), out, t));
        const MatrixView cv = core::batchMatrix(c, t);
        // A shared probe exists only for a finite B.
        const auto probe = checker.sharedProbe(bv);
        MatmulCheckReport check =
            probe ? checkMatmulTileWithProbe(av, bv, cv, *probe)
                  : checkMatmulTile(av, bv, cv, checker.options, checker.random);
        // Honest values may overflow or carry NaN, which the check's gates refuse: recomputed,
        // never rejected. An accepted tile was finite (its magnitude sums prove it), so only a
        // tile the check did not accept is scanned.
        if (check.verdict != Verdict::Accepted &&
            (anyNonFinite(av) || anyNonFinite(cv) || (!probe && anyNonFinite(bv))))
            return HeavyCheck::NeedsRecompute;
        if (check.verdict == Verdict::Escalate) {
            if (checker.greyZone == GreyZone::RecomputeBitwise)
                return HeavyCheck::NeedsRecompute;
            check = checkMatmulTileExactly(av, bv, cv);
            ++report.exactlyChecked;
        }
        if (check.verdict == Verdict::Rejected) {
            report.reason = "batch matrix " + std::to_string(t) + ": " + check.reason;
            return HeavyCheck::Rejected;
        }
        worst = std::max(worst, check.maxErrorRatio);
    }
    report.maxErrorRatio = std::max(report.maxErrorRatio, worst);
    return HeavyCheck::Accepted;
}

// A claimed convolution value, checked as a matmul per group (conv_check.hpp).
HeavyCheck checkConv(const core::graph::GraphNode& node, std::span<const Tensor> args,
                     const Tensor& claim, const Checker& checker, CheapAuditReport& report) {
    const ConvCheckReport check =
        checkClaimedConv(node, args, claim, checker.options, checker.random, checker.greyZone);
    if (check.verdict == Verdict::Escalate)
        return HeavyCheck::NeedsRecompute;
    if (check.verdict == Verdict::Rejected) {
        report.reason = check.reason;
        return HeavyCheck::Rejected;
    }
    report.maxErrorRatio = std::max(report.maxErrorRatio, check.maxErrorRatio);
    return HeavyCheck::Accepted;
}

struct Evaluation {
    std::map<ValueId, Tensor> values;
    // Inputs and constants: tensors the job holds for as long as it runs, so a B among them is
    // the same memory in every task that shares it.
    std::set<ValueId> held;
    std::set<ValueId> claimsUsed; // values that are the claim at their claimedAt position
    std::map<ValueId, std::size_t> claimedAt; // a value's first position in graph.outputs
};

// One node: runOp, or the claimed value checked. Returns a failure reason, if any.
std::optional<std::string> evaluateNode(const core::graph::GraphNode& node,
                                        const core::graph::GraphPlan& plan,
                                        std::span<const Tensor> claimed, Checker checker,
                                        Evaluation& evaluation, CheapAuditReport& report) {
    std::vector<Tensor> args;
    for (ValueId arg : node.args)
        args.push_back(evaluation.values.at(arg));
    const std::string name = "node " + std::to_string(node.id);
    const auto at = evaluation.claimedAt.find(node.id);
    const bool heavy = isHeavyNode(node, plan);
    const bool matmul = node.op == core::ops::OpCode::Matmul;
    const std::string kind = matmul ? "matmul" : std::string(core::ops::opInfo(node.op).name);
    if (heavy && at != evaluation.claimedAt.end()) {
        const Tensor& claim = claimed[at->second];
        checker.heldB = evaluation.held.contains(node.args[1]);
        const HeavyCheck verdict =
            matmul ? checkClaimedMatmul(args[0], args[1], claim, checker, report)
                   : checkConv(node, args, claim, checker, report);
        switch (verdict) {
        case HeavyCheck::Accepted:
            ++report.checked;
            evaluation.values[node.id] = claim;
            evaluation.claimsUsed.insert(node.id);
            return std::nullopt;
        case HeavyCheck::Rejected:
            return name + " (" + kind + "): " + report.reason;
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
            return name + " (" + kind + ", recomputed) differs from the claimed value";
    }
    evaluation.values[node.id] = std::move(*value);
    return std::nullopt;
}

CheapAuditReport audit(const core::graph::Graph& graph, const core::graph::GraphPlan& plan,
                       std::span<const Tensor> inputs, std::span<const Tensor> claimed,
                       const Checker& checker) {
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
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        evaluation.values[graph.inputs[i].id] = inputs[i];
        evaluation.held.insert(graph.inputs[i].id);
    }
    for (const auto& constant : graph.constants) {
        evaluation.values[constant.id] = constant.value;
        evaluation.held.insert(constant.id);
    }
    const auto last = reference::lastUses(graph, plan);
    for (std::size_t step = 0; step < plan.order.size(); ++step) {
        const core::graph::GraphNode& node = graph.nodes[plan.order[step]];
        if (auto failure = evaluateNode(node, plan, claimed, checker, evaluation, report)) {
            report.reason = *failure;
            return report;
        }
        for (ValueId arg : node.args) // held values stay: shared probes are keyed by their memory
            if (last.at(arg) == step && !evaluation.held.contains(arg))
                evaluation.values.erase(arg);
    }
    // Every output must be what the node now holds: recomputed values and, for a value listed
    // twice, the claim it used.
    for (std::size_t o = 0; o < graph.outputs.size(); ++o) {
        const ValueId id = graph.outputs[o];
        if (evaluation.claimsUsed.contains(id) && evaluation.claimedAt.at(id) == o)
            continue; // the very claim it checked
        if (!bitwiseEqual(evaluation.values.at(id), claimed[o])) {
            report.reason = "output " + std::to_string(o) + " (value " +
                            std::to_string(graph.outputs[o]) +
                            ") differs from the node's evaluation";
            return report;
        }
    }
    report.passed = true;
    char summary[200];
    std::snprintf(
        summary, sizeof summary,
        "cheap audit: %zu matmul/conv node(s) checked by Freivalds (worst element error %.3g "
        "of its bound, %zu grey-zone matrices checked exactly), %zu recomputed, the rest "
        "recomputed bit for bit",
        report.checked, report.maxErrorRatio, report.exactlyChecked, report.recomputed);
    report.reason = summary;
    return report;
}

} // namespace

std::shared_ptr<const ColumnProbe> AuditProbes::probeFor(const core::MatrixView& b,
                                                         const MatmulCheckOptions& options,
                                                         core::RandomSource& random) {
    // Made under the lock: only the audits of this job wait, and only for its first probes.
    std::lock_guard lock(m_mutex);
    const Key key{b.data, b.rows, b.cols};
    if (const auto found = m_probes.find(key); found != m_probes.end())
        return found->second;
    auto& slot = m_probes[key];
    if (!anyNonFinite(b)) // a B with NaN or Inf keeps no probe: its matmuls are recomputed
        slot = std::make_shared<const ColumnProbe>(probeColumns(b, options, random));
    return slot;
}

CheapAuditReport runCheapAudit(const core::graph::Graph& graph, const core::graph::GraphPlan& plan,
                               std::span<const core::Tensor> inputs,
                               std::span<const core::Tensor> claimed,
                               const MatmulCheckOptions& options, core::RandomSource& random,
                               AuditProbes* probes, GreyZone greyZone) {
    const auto start = std::chrono::steady_clock::now();
    const Checker checker{options, random, probes, greyZone, false};
    CheapAuditReport report = audit(graph, plan, inputs, claimed, checker);
    report.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return report;
}

} // namespace goblin::verify
