// Typed messages of a training job's streamed data (docs/protocol.md, "Streamed training data"):
// the researcher sends batch k of a job submitted with "stream": true, or says where
// the data ended; the node answers each. Builders write the exact wire fields; parsers validate
// every field of a hostile control object. Pure functions on values; safe on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "goblin/core/error.hpp"
#include "goblin/net/message.hpp"

namespace goblin::net {

// How many batches a streamed training job holds at most: the one its running round trains and
// those after it. The node refuses batch k unless k < rounds committed + kStreamedBatchesAhead.
inline constexpr std::int64_t kStreamedBatchesAhead = 4;

// → {"type":"train_batch","id","job","batch":k,"tensors":2} + x and y: the job's batch k (batch
// 0 came with submit_train). → {"type":"train_batch","id","job","batch":k,"end":true}: the data
// ended before batch k; the job trains k rounds at most.
struct TrainBatch {
    std::int64_t id = 0;
    std::string job;
    std::int64_t batch = 0;
    bool end = false;
    std::vector<TensorPtr> tensors; // x, y; none with `end`
};

// ← {"type":"batch_accepted","id","job","batch":k}: batch k (or the end) is durable at the node.
struct BatchAccepted {
    std::int64_t id = 0;
    std::string job;
    std::int64_t batch = 0;
};

Message toMessage(const TrainBatch& batch);
Message toMessage(const BatchAccepted& accepted);

// InvalidMessage naming the field; a batch carries exactly 2 tensors, an end none.
[[nodiscard]] Expected<TrainBatch> parseTrainBatch(const Message& message);
[[nodiscard]] Expected<BatchAccepted> parseBatchAccepted(const boost::json::object& control);

} // namespace goblin::net
