// What the node makes of a training round's verified outputs (the batch's mean loss and
// gradient), on a worker: the loss and every gradient element checked finite, the gradient
// clipped, the optimizer's step taken on copies of the parameters and state, and the new
// parameters and state stored as blobs for the round's commit. Any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "goblin/core/tensor.hpp"
#include "kinds/train/train_store.hpp"
#include "kinds/train/train_submission.hpp"
#include "store/blob_store.hpp"

namespace goblin::labnode {

struct RoundStep {
    TrainRoundRow record; // with the loss and the gradient's norm
    core::Tensor params;
    std::vector<core::Tensor> optimizerState;
    std::string stored; // the parameters then the state, as stored tensors
};

// `outputs` are the round's loss and gradient; `roundIndex` counts this run's rounds from 0 (the
// learning-rate schedule's index); `record` names the round. InvalidInput when the loss or the
// gradient is not finite, Internal when the outputs or the index do not fit the plan (nothing is
// applied either way).
Expected<RoundStep> takeRoundStep(const TrainPlan& plan, std::int64_t roundIndex,
                                  const core::Tensor& params,
                                  const std::vector<core::Tensor>& optimizerState,
                                  const std::vector<core::Tensor>& outputs, TrainRoundRow record,
                                  const BlobStore& blobs);

// A round's record as train_round and job_done's history carry it.
boost::json::object roundRecordJson(const TrainRoundRow& round);

} // namespace goblin::labnode
