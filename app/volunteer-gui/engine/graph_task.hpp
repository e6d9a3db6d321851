// One graph task on the volunteer: the graph is decoded and validated completely (the volunteer
// trusts no node: unknown ops, bad shapes, cycles and oversize values are refused before anything
// runs), the inputs are checked against it, and the graph runs on the catalog executor.
// Pure; called on the compute thread.
#pragma once

#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "goblin/core/error.hpp"
#include "goblin/core/graph/graph.hpp"
#include "goblin/net/message.hpp"

namespace goblin::volunteer {

struct GraphTaskResult {
    std::vector<core::Tensor> outputs;
    std::string backend; // which executor computed it
    double seconds = 0;
};

Expected<GraphTaskResult> runGraphTask(const boost::json::value& graph,
                                       const std::vector<net::TensorPtr>& inputs,
                                       const core::graph::GraphLimits& limits);

} // namespace goblin::volunteer
