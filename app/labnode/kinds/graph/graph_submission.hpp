// A researcher's submit_graph request, checked completely before anything is stored or leased:
// the graph (decoded and validated against the catalog), its input tensors against the declared
// specs, and the optional batch split (docs/protocol.md, "Graph jobs"). Pure; any thread.
#pragma once

#include <optional>
#include <vector>

#include "goblin/core/graph/graph.hpp"
#include "goblin/net/message.hpp"
#include "goblin/net/messages/plan_messages.hpp"

namespace goblin::labnode {

// How one output of a split job is made from its chunks' outputs: concatenated along a dim, or
// (outputs with no batch dim, such as a mean loss and its gradients) summed, or averaged weighted
// by each chunk's rows, in float64 in chunk order and rounded once to the output's dtype.
struct OutputMerge {
    enum class Kind { Concat, Sum, Mean };
    Kind kind = Kind::Concat;
    int dim = 0; // Concat only

    bool operator==(const OutputMerge&) const = default;
};

// Where the researcher allows the job to be split: marked inputs are cut along their dim into
// chunks (one task each), unmarked ones go whole to every task, and each output is merged as its
// OutputMerge says. Marking asserts that rows of the batch are computed independently.
struct BatchSplit {
    std::vector<std::optional<int>> inputDims; // per graph input; nullopt = not split
    std::vector<OutputMerge> outputs;          // per graph output
    std::int64_t size = 0;                     // the batch size (equal for every marked input)
    std::int64_t chunks = 0;                   // requested; 0 = the node decides
    // When > 0, the graph is written for exactly `microBatch` rows: marked inputs carry `size`, a
    // multiple of it, and every chunk runs the graph unchanged on `microBatch` of them (a graph
    // captured at one batch size, e.g. a training step, is never re-shaped).
    std::int64_t microBatch = 0;
};

// How the job's tasks are verified (docs/verification.md, "Graph tasks"): two volunteers whose
// canonical kernels must agree bit for bit, plus the node's audits (the default); or one
// volunteer whose heavy matmuls may run through any BLAS, every task checked by the node (its
// matmuls by Freivalds per element, every other node recomputed bit for bit).
enum class GraphVerification { Replicas, Freivalds };

struct GraphSubmission {
    core::graph::Graph graph;
    core::graph::GraphPlan plan;
    std::vector<net::TensorPtr> inputs; // graph.inputs order (null in a plan request)
    std::optional<BatchSplit> batch;
    GraphVerification verification = GraphVerification::Replicas;
};

inline constexpr std::int64_t kMaxGraphChunks = 4096;

// The values of received tensors, sharing their storage.
std::vector<core::Tensor> valuesOf(const std::vector<net::TensorPtr>& tensors);

Expected<GraphSubmission> parseGraphSubmission(const net::Message& message,
                                               const core::graph::GraphLimits& limits);

// A plan_graph request, checked as its submit_graph would be but for the tensors: its inputs stay
// null (the graph declares their shapes; a micro-batched job's marked ones carry `rows`).
Expected<GraphSubmission> parseGraphPlanRequest(const net::PlanGraph& request,
                                                const core::graph::GraphLimits& limits);

} // namespace goblin::labnode
