// What fake volunteers answer in the job-kind tests: a matmul tile as the float64 product rounded
// once to f32 (optionally with element 0 off), and a relu graph job of two chunks with its honest,
// lying (element 0 off by 0.5, from a canonical backend) and misshapen outputs; any graph task
// run by the CPU reference; relu(x·w) in two chunks whose matmul is each chunk's witness; and
// whether the node quarantined a volunteer. Plain functions; the
// test's thread.
#pragma once

#include <algorithm>
#include <utility>

#include "fake_cluster.hpp"
#include "goblin/core/graph/graph_json.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "support/random_tensors.hpp"

namespace goblin::labnode::testing {

// C = A·B accumulated in float64, rounded once to f32; `corruption` is added to element 0.
inline core::Tensor product(const core::Tensor& a, const core::Tensor& b, float corruption = 0) {
    const std::int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
    core::Tensor c = core::Tensor::allocate(core::DType::F32, {m, n}).value();
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            double sum = 0;
            for (std::int64_t p = 0; p < k; ++p)
                sum += double(a.values<float>()[std::size_t(i * k + p)]) *
                       b.values<float>()[std::size_t(p * n + j)];
            c.values<float>()[std::size_t(i * n + j)] = static_cast<float>(sum);
        }
    c.values<float>()[0] += corruption;
    return c;
}

inline net::Message honestTile(const net::Message& task) {
    return resultFor(
        task, {std::make_shared<const core::Tensor>(product(*task.tensors[0], *task.tensors[1]))});
}

inline constexpr std::int64_t kReluRows = 8, kReluCols = 3;

// relu(x) over a [8, 3] f32 input, split along dim 0 into two tasks.
inline net::Message submitRelu(const core::Tensor& x) {
    boost::json::object graph{
        {"catalog", 3},
        {"inputs", {{{"id", 0}, {"dtype", "f32"}, {"shape", {kReluRows, kReluCols}}}}},
        {"constants", boost::json::array{}},
        {"nodes", {{{"id", 1}, {"op", "relu"}, {"args", {0}}, {"attrs", boost::json::object{}}}}},
        {"outputs", {1}}};
    return net::Message{
        boost::json::object{{"type", "submit_graph"},
                            {"id", 6},
                            {"graph", std::move(graph)},
                            {"batch", {{"inputs", {0}}, {"outputs", {0}}, {"chunks", 2}}},
                            {"tensors", 1}},
        {std::make_shared<const core::Tensor>(x)}};
}

// relu(x); `corruption` is added to element 0.
inline core::Tensor relu(const core::Tensor& x, float corruption = 0) {
    core::Tensor y = core::Tensor::allocate(core::DType::F32, x.shape()).value();
    for (std::size_t i = 0; i < y.values<float>().size(); ++i)
        y.values<float>()[i] = std::max(x.values<float>()[i], 0.0f);
    y.values<float>()[0] += corruption;
    return y;
}

inline net::Message honestRelu(const net::Message& task) {
    return resultFor(task, {std::make_shared<const core::Tensor>(relu(*task.tensors.at(0)))});
}

// relu(x) with element 0 off by 0.5, from a canonical backend (so only bit-for-bit agreement
// counts).
inline net::Message lyingRelu(const net::Message& task) {
    return resultFor(task, {std::make_shared<const core::Tensor>(relu(*task.tensors.at(0), 0.5f))},
                     "opencl-graph");
}

// A [1, 1] output where the task wants another shape: rejected at the gate.
inline net::Message misshapenResult(const net::Message& task) {
    return resultFor(task, {std::make_shared<const core::Tensor>(
                               core::Tensor::allocate(core::DType::F32, {1, 1}).value())});
}

inline bool quarantined(NodeHarness& node, const std::string& volunteer) {
    return queryInt(node.store, "SELECT count(*) FROM volunteer_trust WHERE volunteer_id = '" +
                                    volunteer + "' AND quarantined_at IS NOT NULL") == 1;
}

// What an honest canonical volunteer returns: the task's own graph run by the CPU reference.
inline std::vector<core::Tensor> runTaskGraph(const net::Message& task) {
    const auto g = core::graph::decodeGraph(boost::json::serialize(task.control.at("graph")));
    const auto plan = core::graph::validateGraph(g.value()).value();
    std::vector<core::Tensor> inputs;
    for (const auto& tensor : task.tensors)
        inputs.push_back(*tensor);
    return reference::runGraph(*g, plan, inputs).value();
}

inline net::Message answerWith(const net::Message& task, std::vector<core::Tensor> outputs,
                               const std::string& backend = "cpu-reference") {
    std::vector<net::TensorPtr> tensors;
    for (core::Tensor& output : outputs)
        tensors.push_back(std::make_shared<const core::Tensor>(std::move(output)));
    return resultFor(task, std::move(tensors), backend);
}

inline constexpr std::int64_t kMlpRows = 8, kMlpInner = 128, kMlpCols = 4;

// relu(x @ w) over x [8, 128] (split along dim 0 into two tasks) and w [128, 4]: the researcher's
// one output is the relu; each chunk's graph also outputs the matmul's value as a witness.
inline net::Message submitMatmulRelu(const core::Tensor& x, const core::Tensor& w) {
    boost::json::object graph{
        {"catalog", 3},
        {"inputs",
         {{{"id", 0}, {"dtype", "f32"}, {"shape", {kMlpRows, kMlpInner}}},
          {{"id", 1}, {"dtype", "f32"}, {"shape", {kMlpInner, kMlpCols}}}}},
        {"constants", boost::json::array{}},
        {"nodes",
         {{{"id", 2}, {"op", "matmul"}, {"args", {0, 1}}, {"attrs", boost::json::object{}}},
          {{"id", 3}, {"op", "relu"}, {"args", {2}}, {"attrs", boost::json::object{}}}}},
        {"outputs", {3}}};
    return net::Message{
        boost::json::object{{"type", "submit_graph"},
                            {"id", 7},
                            {"graph", std::move(graph)},
                            {"batch", {{"inputs", {0, nullptr}}, {"outputs", {0}}, {"chunks", 2}}},
                            {"tensors", 2}},
        {std::make_shared<const core::Tensor>(x), std::make_shared<const core::Tensor>(w)}};
}

// x [kMlpRows, kMlpInner] and w [kMlpInner, kMlpCols] of relu(x·w), drawn from seeds `seed`, +1.
inline std::pair<core::Tensor, core::Tensor> mlpInputs(std::uint64_t seed) {
    return {goblin::testing::randomTensor(core::DType::F32, {kMlpRows, kMlpInner}, seed),
            goblin::testing::randomTensor(core::DType::F32, {kMlpInner, kMlpCols}, seed + 1)};
}

} // namespace goblin::labnode::testing
