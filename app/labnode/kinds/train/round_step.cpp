#include "kinds/train/round_step.hpp"

#include <algorithm>
#include <cmath>

#include <boost/json.hpp>

#include "kinds/graph/graph_blobs.hpp"
#include "kinds/train/optimizer_step.hpp"

namespace goblin::labnode {

namespace json = boost::json;

namespace {

// A copy of any rank (a scalar parameter's included) that the step may write.
Expected<core::Tensor> copyOf(const core::Tensor& tensor) {
    auto copy = core::Tensor::allocate(tensor.dtype(), tensor.shape());
    if (copy)
        std::ranges::copy(tensor.bytes(), copy->bytes().begin());
    return copy;
}

// "nan", "inf", "-inf" or the number, as a researcher reads it.
std::string numberText(double value) {
    if (std::isnan(value))
        return "nan";
    if (std::isinf(value))
        return value > 0 ? "inf" : "-inf";
    return std::to_string(value);
}

// The optimizer step: the gradient checked, clipped and applied to the copies.
Expected<void> applyStep(const TrainPlan& plan, std::int64_t round, std::int64_t roundIndex,
                         core::Tensor& grad, core::Tensor& params, std::vector<core::Tensor>& state,
                         TrainRoundRow& record) {
    if (grad.dtype() != core::DType::F32 || grad.shape() != params.shape())
        return makeError(ErrorCode::Internal, "the gradient does not match the parameters");
    for (float value : grad.values<float>())
        if (!std::isfinite(value))
            return makeError(ErrorCode::InvalidInput, "round " + std::to_string(round) +
                                                          ": a gradient is not finite (the "
                                                          "loss is " +
                                                          numberText(record.loss) +
                                                          "); nothing was applied");
    if (roundIndex < 0 || static_cast<std::size_t>(roundIndex) >= plan.learningRates.size())
        return makeError(ErrorCode::Internal, "round " + std::to_string(round) +
                                                  " is past the learning-rate schedule (" +
                                                  std::to_string(plan.learningRates.size()) +
                                                  " rounds)");
    record.gradNorm = plan.clipGradNorm ? clipGradNorm(grad, *plan.clipGradNorm) : gradNorm(grad);
    const double lr = plan.learningRates[static_cast<std::size_t>(roundIndex)];
    return optimizerStep(plan.optimizer, lr, round + 1, params, grad, state);
}

} // namespace

Expected<RoundStep> takeRoundStep(const TrainPlan& plan, std::int64_t roundIndex,
                                  const core::Tensor& params,
                                  const std::vector<core::Tensor>& optimizerState,
                                  const std::vector<core::Tensor>& outputs, TrainRoundRow record,
                                  const BlobStore& blobs) {
    if (outputs.size() != 2)
        return makeError(ErrorCode::Internal, "a round's job has two outputs");
    if (outputs[0].elementCount() != 1 || outputs[0].dtype() != core::DType::F32)
        return makeError(ErrorCode::Internal, "a round's loss is one float32");
    RoundStep result;
    result.record = std::move(record);
    result.record.loss = static_cast<double>(outputs[0].values<float>()[0]);
    if (!std::isfinite(result.record.loss))
        return makeError(ErrorCode::InvalidInput,
                         "round " + std::to_string(result.record.round) + ": the loss is " +
                             numberText(result.record.loss) + "; nothing was applied");
    auto grad = copyOf(outputs[1]);
    auto newParams = copyOf(params);
    if (!grad || !newParams)
        return makeError(ErrorCode::Internal, "no memory for the optimizer step");
    for (const core::Tensor& buffer : optimizerState) {
        auto copy = copyOf(buffer);
        if (!copy)
            return tl::unexpected(copy.error());
        result.optimizerState.push_back(std::move(*copy));
    }
    if (auto ok = applyStep(plan, result.record.round, roundIndex, *grad, *newParams,
                            result.optimizerState, result.record);
        !ok)
        return tl::unexpected(ok.error());
    result.params = std::move(*newParams);
    std::vector<core::Tensor> current{result.params};
    current.insert(current.end(), result.optimizerState.begin(), result.optimizerState.end());
    auto stored = storeTensors(blobs, current);
    if (!stored)
        return makeError(ErrorCode::Internal, "storing the parameters failed");
    result.stored = json::serialize(*stored);
    return result;
}

json::object roundRecordJson(const TrainRoundRow& round) {
    json::object record{{"round", round.round},
                        {"loss", round.loss},
                        {"grad_norm", round.gradNorm},
                        {"tasks", round.tasks},
                        {"verified_tasks", round.tasks},
                        {"rejected", round.rejected},
                        {"node_audited", round.nodeAudited},
                        {"node_decided", round.nodeDecided},
                        {"seconds", round.seconds},
                        {"verification_seconds", round.verificationSeconds},
                        {"graph_job", round.graphJob}};
    if (!round.redone.empty())
        record["redone"] = round.redone;
    return record;
}

} // namespace goblin::labnode
