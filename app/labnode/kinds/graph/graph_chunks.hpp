// Turns a checked graph submission into tasks: one chunk for an unsplit graph, or one per batch
// range when the researcher marked a batch split; a range whose values exceed the stage budget
// (what the volunteers lend) is cut into stages (plan/stage_cut.hpp), one chunk each, later stages
// reading the values earlier ones output (boundary inputs, filled in once those are decided). Each
// chunk carries its own graph (input shapes of its range), validated again, its tolerances for
// replica comparison and its input tensors; the researcher's outputs of each range are merged
// back along the output batch dims. A chunk's graph also outputs its heavy nodes' values
// (witnesses, graph_witnesses.hpp) after the outputs it keeps; they are never merged into the
// researcher's result. Pure; any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "goblin/plan/lifted_ends.hpp"
#include "goblin/verify/output_agreement.hpp"
#include "kinds/graph/graph_submission.hpp"

namespace goblin::labnode {

// A boundary input of a stage: output `output` of the chunk `chunk` (an earlier stage of the same
// batch range).
struct BoundarySource {
    std::size_t chunk = 0;
    std::size_t output = 0;
};

inline constexpr std::size_t kNotMerged = static_cast<std::size_t>(-1);

struct GraphChunk {
    core::graph::Graph graph;
    core::graph::GraphPlan plan;
    std::string json; // what volunteers receive
    // A boundary input is null until the stage it comes from is decided (fillBoundaryInputs).
    std::vector<net::TensorPtr> inputs;
    // Per input: its tensor digest when every chunk gets it whole and it is worth naming (at
    // least kMinNamedInputBytes), else empty. Volunteers that keep inputs get it once.
    std::vector<std::string> inputDigests;
    std::vector<verify::OutputTolerance> tolerances;
    std::int64_t offset = 0; // first batch row (0 when unsplit)
    // Memory a volunteer needs to run it (stage_chunks.hpp, heldByTask), and to hold it until it
    // runs (its inputs and constants).
    std::int64_t peakBytes = 0;
    std::int64_t givenBytes = 0;
    // Witness outputs appended after the researcher's (graph.outputs' last `witnesses` entries).
    std::size_t witnesses = 0;
    // The outputs a decided task keeps (graph.outputs' first ones): the researcher's and, for a
    // stage, the values later stages read.
    std::size_t researcherOutputs() const { return graph.outputs.size() - witnesses; }
    // Whether a result of `count` outputs brought every one, the witnesses included (a lease told
    // to omit them brings the researcher's alone).
    bool withWitnesses(std::size_t count) const { return count == tolerances.size(); }
    // Per kept output: the researcher's output it is, or kNotMerged (a value only handed on).
    std::vector<std::size_t> mergedAs;
    // Per kept output: which part of its researcher output it is (0 when it is the whole), and
    // per researcher output, the parts its stages compute and the dim they are concatenated
    // along (empty: one part each; plan/lifted_ends.hpp).
    std::vector<std::size_t> mergedPart;
    std::vector<plan::OutputParts> outputParts;
    std::size_t range = 0; // the batch range it computes (0 when unsplit)
    std::size_t stage = 0; // 0 when the range is not cut
    // Per input: where a boundary input comes from (nullopt: given at submission).
    std::vector<std::optional<BoundarySource>> boundary;
    std::vector<std::size_t> dependsOn; // the chunks whose outputs it reads
    // Why a range over the stage budget stayed whole (it could not be cut to fit); else empty.
    std::string whyWhole;
    // Such a range's biggest single value that a node reads or makes (no cut splits a value):
    // its bytes and its node ("node 7 (tanh)").
    std::int64_t bulkiestValueBytes = 0;
    std::string bulkiestValueNode;
    // A stage of a range whose matmuls were cut into tiles (plan/matmul_tiles.hpp): the range's
    // products cut, and the tiles this task computes.
    std::int64_t tiledMatmuls = 0;
    std::int64_t tiles = 0;
    // With GraphVerification::Freivalds: the heavy matmuls and conv2ds, then the conv2d
    // gradients, whose values are outputs (the node checks them by Freivalds), which volunteers
    // may compute with any GEMM (gemm_nodes); volunteers of protocols before
    // kConvGradientGemmProtocol are named the first gemmNodesWithoutGradients alone (they refuse
    // a task naming a gradient).
    std::vector<std::int64_t> gemmNodes;
    std::size_t gemmNodesWithoutGradients = 0;
    std::vector<std::int64_t> gemmNodesFor(int protocol) const {
        const std::size_t named =
            protocol >= kConvGradientGemmProtocol ? gemmNodes.size() : gemmNodesWithoutGradients;
        return {gemmNodes.begin(), gemmNodes.begin() + static_cast<std::ptrdiff_t>(named)};
    }
    static constexpr int kConvGradientGemmProtocol = 9;
};

inline constexpr std::size_t kMinNamedInputBytes = 1024;

// The planners a job may have been cut by; a job keeps its own, so that it reloads with the tasks
// it was given. 1: every value a task holds counted, in breadth-first order. 2: equally good cuts
// told apart by the FLOPs of their heaviest stage, and the graph's trivial ends lifted first
// (plan/lifted_ends.hpp: the node slices whole inputs that only slices read, and concatenates an
// output's parts). 3: what a task holds at once counted, witnesses included, with nodes reading
// only inputs run just before their first reader (plan::StageMeasure). 4: matmuls too big for a
// task cut into tiles first (plan/matmul_tiles.hpp), inputs lifted through chains of slices,
// reshapes and permutes (plan::LiftRules). 5: a stage also ends before it would take more tensors
// than a task carries, and is cut only where it outputs at most as many as a result carries
// (plan::CutRules::maxStageInputs, maxStageOutputs), so that a backward reading many saved
// activations or making many gradient parts is cut in more stages rather than left whole.
// 6 (current): with replicas a matmul of inner size under verify::kMinCheckedCanonicalInner is no
// witness (its audit recomputes it bit for bit anyway), so its value does not travel.
inline constexpr int kFirstPlanner = 1;
inline constexpr int kCurrentPlanner = 6;

// How a batch range over the budget is cut into stages: the most a task may hold (0: no budget,
// never cut), and by which planner.
struct StageBudget {
    std::int64_t bytes = 0;
    int planner = kCurrentPlanner;
};

// `chunks` is used when the submission does not ask for a number; clamped to [1, batch size]. A
// range holding more than the budget's bytes of values is cut into stages when it can be; one
// that cannot stays whole. A plan request's null inputs stay null (nothing is sliced).
Expected<std::vector<GraphChunk>> splitIntoChunks(const GraphSubmission& submission,
                                                  std::int64_t chunks,
                                                  const core::graph::GraphLimits& limits,
                                                  const StageBudget& stageBudget = {});

// The number of batch ranges among the chunks.
std::size_t rangeCount(const std::vector<GraphChunk>& chunks);
// "N task(s)", and how they were cut when some range was cut into stages, for the log.
std::string describeTasks(const std::vector<GraphChunk>& chunks);

// Fills a chunk's boundary inputs from the kept outputs of the chunks it depends on
// (`outputsOf(chunk)`, null when not at hand).
Expected<void>
fillBoundaryInputs(GraphChunk& chunk,
                   const std::function<const std::vector<core::Tensor>*(std::size_t)>& outputsOf);

// The full outputs from every chunk's accepted outputs (chunks in order): the researcher's outputs
// only, never a value only handed on or a chunk's witnesses.
Expected<std::vector<core::Tensor>>
mergeChunkOutputs(const GraphSubmission& submission, const std::vector<GraphChunk>& chunks,
                  const std::vector<std::vector<core::Tensor>>& outputs);

} // namespace goblin::labnode
