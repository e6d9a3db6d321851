// The JSON wire form of graphs and of small inline tensors (docs/ops.md, "Wire form"). Decoding
// treats the text as hostile: sizes, ranks, counts and ids are bounded before anything is built.
// Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>

#include "goblin/core/error.hpp"
#include "goblin/core/graph/graph.hpp"

namespace goblin::core::graph {

inline constexpr std::size_t kMaxGraphJsonBytes = std::size_t{64} << 20;

// Decodes and structurally checks a graph (known ops, well-formed attributes); semantic checks are
// validateGraph's. Errors are InvalidMessage (malformed) or LimitExceeded.
Expected<Graph> decodeGraph(std::string_view json, const GraphLimits& limits = {});
std::string encodeGraph(const Graph& graph);

// {"dtype": "f32", "shape": [2], "values": [1.5, "nan", "-inf"]}: values in C order; floats may be
// the strings "nan", "inf", "-inf"; bools are true/false.
Expected<Tensor> decodeTensorJson(std::string_view json, std::size_t maxBytes);
std::string encodeTensorJson(const Tensor& tensor);

} // namespace goblin::core::graph
