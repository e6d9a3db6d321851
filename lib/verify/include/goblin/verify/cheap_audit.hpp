// The node's cheap audit of a graph task: the chunk's graph is evaluated in plan order from its
// inputs, but a heavy node (an f32/f64 matmul or convolution, graph_witnesses.hpp) is not
// recomputed: the value a replica claims for it (a witness or researcher output) is checked by
// Freivalds per batch matrix (checkMatmulTile) or, for a convolution, per group and image
// as a matmul of its im2col operand (conv_check.hpp); a grey-zone matrix has the node recomputed
// and compared bit for bit. The checked value is used downstream. Every other node is recomputed
// with the CPU reference, and every output that is not a heavy node's value must equal the claim
// bit for bit (docs/verification.md, "Graph tasks", item 5). Pure; any thread (the random source
// must be that thread's).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <tuple>

#include "goblin/core/graph/graph.hpp"
#include "goblin/core/random_source.hpp"
#include "goblin/core/tensor.hpp"
#include "goblin/verify/grey_zone.hpp"
#include "goblin/verify/matmul_check.hpp"

namespace goblin::verify {

struct CheapAuditReport {
    bool passed = false;
    std::string reason;         // why it failed, or what it checked when it passed
    double maxErrorRatio = 0.0; // worst element error ÷ its own bound over Freivalds-checked nodes
    std::size_t checked = 0;    // heavy nodes (matmuls, convolutions) checked by Freivalds
    std::size_t recomputed = 0; // heavy nodes recomputed (grey zone, non-finite, not witnessed)
    std::size_t exactlyChecked = 0; // grey-zone batch matrices decided by the exact check
    double seconds = 0.0;
};

// The Freivalds probes (random vectors, B·r, |B|·w) of matmul operands B that are graph inputs or
// constants, shared by the audits of one job's tasks: a job's weights (the same tensor in every
// task) are then read once, not once per audit. Keyed by B's memory, so the tensors must outlive
// the probes: the lab node keeps one AuditProbes per running job, which holds them. A probe is
// made by the first audit that needs it, from that audit's random stream; the vectors never leave
// the node. Thread-safe: audits on several workers share one.
class AuditProbes {
public:
    // Null when B holds NaN or Inf (looked at once): such a matmul is recomputed.
    std::shared_ptr<const ColumnProbe> probeFor(const core::MatrixView& b,
                                                const MatmulCheckOptions& options,
                                                core::RandomSource& random);

private:
    using Key = std::tuple<const std::byte*, std::int64_t, std::int64_t>; // data, rows, cols
    std::mutex m_mutex;
    std::map<Key, std::shared_ptr<const ColumnProbe>> m_probes;
};

// `claimed` are the replica's outputs in graph.outputs order (witnesses included); `inputs` in
// graph.inputs order; `plan` from core::graph::validateGraph(graph). `probes` (may be null) shares
// the probes of input and constant operands with the other audits of the job.
CheapAuditReport runCheapAudit(const core::graph::Graph& graph, const core::graph::GraphPlan& plan,
                               std::span<const core::Tensor> inputs,
                               std::span<const core::Tensor> claimed,
                               const MatmulCheckOptions& options, core::RandomSource& random,
                               AuditProbes* probes = nullptr,
                               GreyZone greyZone = GreyZone::RecomputeBitwise);

} // namespace goblin::verify
