// Test helpers for graphs written as JSON: decoded and validated (aborting the test binary on a
// malformed fixture), and tensors compared bit for bit.
#pragma once

#include <QtGlobal>

#include <cstring>
#include <string>

#include "goblin/core/graph/graph.hpp"
#include "goblin/core/graph/graph_json.hpp"
#include "goblin/core/tensor.hpp"

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

inline bool sameBits(const core::Tensor& a, const core::Tensor& b) {
    return a.dtype() == b.dtype() && a.shape() == b.shape() &&
           std::memcmp(a.bytes().data(), b.bytes().data(), a.byteSize()) == 0;
}

} // namespace goblin::testing
