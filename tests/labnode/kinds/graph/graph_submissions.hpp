// Graph submissions built in tests, as graph_intake would accept them: a graph, its inputs and
// how its batch is split. Any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "goblin/core/graph/graph.hpp"
#include "kinds/graph/graph_submission.hpp"

namespace goblin::labnode::testing {

inline GraphSubmission submissionOf(core::graph::Graph g, std::vector<core::Tensor> inputs,
                                    std::optional<BatchSplit> batch) {
    GraphSubmission s;
    s.plan = core::graph::validateGraph(g).value();
    s.graph = std::move(g);
    for (core::Tensor& t : inputs)
        s.inputs.push_back(std::make_shared<const core::Tensor>(std::move(t)));
    s.batch = std::move(batch);
    return s;
}

// `chunks` 0: the node decides how many.
inline BatchSplit splitOf(std::vector<std::optional<int>> inputDims,
                          std::vector<OutputMerge> outputs, std::int64_t size,
                          std::int64_t chunks = 0) {
    BatchSplit batch;
    batch.inputDims = std::move(inputDims);
    batch.outputs = std::move(outputs);
    batch.size = size;
    batch.chunks = chunks;
    return batch;
}

} // namespace goblin::labnode::testing
