// Test helpers for graphs written as JSON: decoded and validated (aborting the test binary on a
// malformed fixture), and tensors compared bit for bit (tensor_bits.hpp).
#pragma once

#include <QtGlobal>

#include <cstdint>
#include <string>
#include <vector>

#include "goblin/core/graph/graph.hpp"
#include "goblin/core/graph/graph_json.hpp"
#include "goblin/core/tensor.hpp"
#include "support/tensor_bits.hpp"

namespace goblin::testing {

struct ParsedGraph {
    core::graph::Graph graph;
    core::graph::GraphPlan plan;
};

inline ParsedGraph parseGraph(const std::string& json) {
    auto decoded = core::graph::decodeGraph(json);
    if (!decoded)
        qFatal("%s", decoded.error().message.c_str());
    auto validated = core::graph::validateGraph(*decoded);
    if (!validated)
        qFatal("%s", validated.error().message.c_str());
    return ParsedGraph{*decoded, *validated};
}

// One f32 tensor per graph input, of values in [-1, 1] drawn from `seed` (a fixed pattern).
inline std::vector<core::Tensor> patternedInputs(const core::graph::Graph& graph,
                                                 std::uint32_t seed) {
    std::vector<core::Tensor> inputs;
    std::uint32_t state = seed;
    for (const auto& input : graph.inputs) {
        core::Tensor t = core::Tensor::allocate(input.spec.dtype, input.spec.shape).value();
        for (float& v : t.values<float>()) {
            state = state * 1664525u + 1013904223u;
            v = static_cast<float>(static_cast<int>(state >> 9) % 2001 - 1000) / 1000.0f;
        }
        inputs.push_back(std::move(t));
    }
    return inputs;
}

} // namespace goblin::testing
