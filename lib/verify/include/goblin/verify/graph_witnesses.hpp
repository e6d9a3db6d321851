// Witness outputs of a chunk's graph: the value of every heavy node (a floating-point matmul or
// convolution) is appended to the graph's outputs, so volunteers return it like any other output
// and the node can audit the task cheaply (cheap_audit.hpp) instead of recomputing it. Every task
// gets them, so a volunteer cannot tell which tasks will be audited. Deterministic (a restarted
// node rebuilds the same chunks); pure, any thread.
#pragma once

#include <cstddef>
#include <vector>

#include "goblin/core/graph/graph.hpp"

namespace goblin::verify {

// Below this inner size a matmul is cheaper to recompute than to check: Freivalds costs about
// 15·m·n + 4·k·n operations per matrix against m·k·n for the product.
inline constexpr std::int64_t kMinHeavyInner = 64;

// Below this inner size a canonical matmul value (a replica's: the reference's bits) is recomputed
// and compared bit for bit rather than checked by Freivalds (cheap_audit.hpp): the check's cost per
// output element does not shrink with K (about 15 float64 multiply-adds and a judged residual,
// whatever K), the product's does, and at K = 64 the reference's product costs less than the
// check (1.2–2.3× less on 64×64×32 to 2560×64×512; at K = 96 they are even).
inline constexpr std::int64_t kMinCheckedCanonicalInner = 96;

// A convolution (conv2d and its gradients) is checked as a matmul per group (conv_check.hpp): its
// reduction K must be at least kMinHeavyInner and its matmul's columns per group (O/groups for
// conv2d and the weight gradient, C/groups for the input gradient) at least kMinConvColumns. The
// check reads its im2col operand once (1/columns of the convolution's work) and computes
// A·(B·r) for V = 2 vectors and one magnitude per column block, about (V + 2)/columns of the
// work, plus ≈ 15 operations per output element (15/K): at 16 columns and K = 64 about half the
// convolution, at 64 channels and K = 576 under a tenth. A depthwise convolution (1 column per
// group) is cheaper to recompute.
inline constexpr std::int64_t kMinConvColumns = 16;

// A node the cheap audit checks by Freivalds instead of recomputing: a matmul of f32 or f64 with
// an inner size of at least kMinHeavyInner, or an f32/f64 convolution as above.
bool isHeavyNode(const core::graph::GraphNode& node, const core::graph::GraphPlan& plan);

// Multiply-adds of a matmul or convolution node (its gradients too): its output's element count
// times its inner size. 0 for any other node.
double multiplyAddsOf(const core::graph::GraphNode& node, const core::graph::GraphPlan& plan);

// Appends heavy nodes that are not outputs yet to graph.outputs, the largest (multiply-adds: output
// elements × K) first while the outputs stay within maxOutputs (a result message carries at most
// that many tensors), then in plan order. Matmuls of an inner size under minMatmulInner are left
// out (kMinCheckedCanonicalInner for replicas: an audit recomputes those anyway). Returns how many
// were appended; the others are recomputed by an audit.
std::size_t addWitnessOutputs(core::graph::Graph& graph, const core::graph::GraphPlan& plan,
                              std::size_t maxOutputs, std::int64_t minMatmulInner = kMinHeavyInner);

// Which heavy nodes a volunteer may compute with any GEMM: the gradients of convolutions are
// named only to volunteers that can (protocol 9 and later).
enum class GemmOps { MatmulAndConv2d, WithConvGradients };

// The heavy matmul, conv2d and (with GemmOps::WithConvGradients) conv2d gradient nodes whose values
// are outputs of the graph (witnesses or the researcher's): checked by a cheap audit by Freivalds
// instead of recomputed, so a volunteer may compute them with any GEMM
// (GraphVerification::Freivalds, the task's gemm_nodes). Node order.
std::vector<std::int64_t> checkedGemmNodes(const core::graph::Graph& graph,
                                           const core::graph::GraphPlan& plan, GemmOps ops);

} // namespace goblin::verify
