// A researcher's submit_train request, checked completely before anything is stored: the captured
// training step (a graph (flat params, x, y, constants…) → (loss, flat grad), written for one
// micro-batch), every sample of x and y, the optimizer and its learning rate per round, and the
// optimizer state to resume from (docs/protocol.md, "Training jobs"). Also the submit_graph of each
// round: the step on the round's batch, in micro-batch tasks whose loss and gradient the node
// averages. Pure; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <boost/json/value.hpp>

#include "goblin/core/graph/graph.hpp"
#include "goblin/net/message.hpp"
#include "kinds/train/optimizer_step.hpp"

namespace goblin::labnode {

struct TrainPlan {
    std::size_t paramsInput = 0; // the graph input holding the flat float32 parameter vector
    std::size_t xInput = 0, yInput = 0;
    std::int64_t batchSize = 0, microBatch = 0;
    std::int64_t rounds = 0;     // rounds of this job
    std::int64_t firstRound = 0; // rounds trained before (a resumed run): the data position and
                                 // the optimizer's step count continue from there
    std::optional<double> clipGradNorm;
    // Dropout: absolute round r draws its masks with seed dropoutSeed + r ("dropout_seed").
    std::int64_t dropoutSeed = 0;
    // Streamed data ("stream": true): x and y carry the first batch; batch k of this job (round
    // firstRound + k) comes in train_batch.
    bool streamed = false;
    // "verification": "freivalds": each round's graph job is verified by Freivalds (one volunteer
    // per micro-batch, its heavy matmuls and convolutions through BLAS, every task checked by the
    // node); the default "replicas" keeps two bitwise-agreeing volunteers.
    bool checkedByFreivalds = false;
    OptimizerSpec optimizer;
    std::vector<double> learningRates; // one per round of this job
};

struct TrainSubmission {
    boost::json::value graph; // the step's wire form, as submitted
    TrainPlan plan;
    std::vector<net::TensorPtr> inputs; // graph.inputs order; x and y carry every sample
    std::vector<core::Tensor> state;    // optimizer buffers to resume from; empty = fresh
    std::int64_t samples = 0;
    double flops = 0; // what its rounds compute (graph_cost.hpp), for the quota
};

inline constexpr std::int64_t kMaxTrainRounds = 1'000'000;

// `message.tensors` are the graph's inputs, then `train.state` optimizer buffers.
Expected<TrainSubmission> parseTrainSubmission(const net::Message& message,
                                               const core::graph::GraphLimits& limits);

inline constexpr std::int64_t kMaxDropoutSeed = std::int64_t{1} << 62;

// The submit_graph of absolute round `round` with `params`: samples (round·B + i) mod N, or the
// round's streamed batch (x, y) when given, and every dropout_mask's seed set to
// dropoutSeed + round.
Expected<net::Message> roundMessage(const TrainSubmission& submission, const core::Tensor& params,
                                    std::int64_t round,
                                    const std::vector<core::Tensor>* streamedBatch = nullptr);

// A streamed batch matches the first: x and y of its dtypes and shapes (ShapeMismatch otherwise).
Expected<void> checkStreamedBatch(const TrainSubmission& submission,
                                  const std::vector<net::TensorPtr>& batch);

} // namespace goblin::labnode
