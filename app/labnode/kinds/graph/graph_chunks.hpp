// Turns a checked graph submission into tasks: one chunk for an unsplit graph, or one per batch
// range when the researcher marked a batch split. Each chunk carries its own graph (input shapes of
// its range), validated again, its tolerances for replica comparison and its input tensors; the
// outputs of the chunks are merged back along the output batch dims. A chunk's graph also outputs
// its heavy nodes' values (witnesses, graph_witnesses.hpp) after the researcher's outputs; they
// are never merged into the researcher's result. Pure; any thread.
#pragma once

#include <string>
#include <vector>

#include "goblin/verify/output_agreement.hpp"
#include "kinds/graph/graph_submission.hpp"

namespace goblin::labnode {

struct GraphChunk {
    core::graph::Graph graph;
    core::graph::GraphPlan plan;
    std::string json; // what volunteers receive
    std::vector<net::TensorPtr> inputs;
    // Per input: its tensor digest when every chunk gets it whole and it is worth naming (at
    // least kMinNamedInputBytes), else empty. Volunteers that keep inputs get it once.
    std::vector<std::string> inputDigests;
    std::vector<verify::OutputTolerance> tolerances;
    std::int64_t offset = 0; // first batch row (0 when unsplit)
    // Memory a volunteer needs for it: every value of the graph at once (an upper bound: both
    // executors drop a value after its last use).
    std::int64_t peakBytes = 0;
    // Witness outputs appended after the researcher's (graph.outputs' last `witnesses` entries).
    std::size_t witnesses = 0;
    // The researcher's outputs (graph.outputs' first ones): all a decided task keeps.
    std::size_t researcherOutputs() const { return graph.outputs.size() - witnesses; }
    // With GraphVerification::Freivalds: the heavy matmuls and conv2ds whose values are outputs
    // (the node checks them by Freivalds), which volunteers may compute with any GEMM
    // (gemm_nodes).
    std::vector<std::int64_t> gemmNodes;
};

inline constexpr std::size_t kMinNamedInputBytes = 1024;

// `chunks` is used when the submission does not ask for a number; clamped to [1, batch size].
Expected<std::vector<GraphChunk>> splitIntoChunks(const GraphSubmission& submission,
                                                  std::int64_t chunks,
                                                  const core::graph::GraphLimits& limits);

// The full outputs from every chunk's accepted outputs (chunks in order): the researcher's outputs
// only, never a chunk's witnesses.
Expected<std::vector<core::Tensor>>
mergeChunkOutputs(const GraphSubmission& submission, const std::vector<GraphChunk>& chunks,
                  const std::vector<std::vector<core::Tensor>>& outputs);

} // namespace goblin::labnode
