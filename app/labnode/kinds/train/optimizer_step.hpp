// The optimizer step a training job takes at the node after each round, on the flat float32
// parameter vector: torch.optim's single-tensor formulas for SGD (momentum, dampening, Nesterov,
// L2 weight decay), Adam and AdamW (decoupled weight decay), and clip_grad_norm_'s clipping, in
// float32 in a fixed order, so a resumed job continues to the same bits. Pure; any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "goblin/core/error.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::labnode {

struct OptimizerSpec {
    enum class Kind { Sgd, Adam, AdamW };
    Kind kind = Kind::Sgd;
    double momentum = 0, dampening = 0, weightDecay = 0;
    bool nesterov = false;
    double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;

    // Buffers per parameter vector: SGD with momentum 1 (momentum_buffer), Adam 2 (exp_avg,
    // exp_avg_sq), plain SGD none.
    std::size_t stateTensors() const;
};

// Scales `grad` so that its 2-norm is at most `maxNorm` (clip_coef = maxNorm / (norm + 1e-6),
// clamped to 1, applied always); returns the norm before clipping.
double clipGradNorm(core::Tensor& grad, double maxNorm);
// The 2-norm of `grad` (float64 sum of squares).
double gradNorm(const core::Tensor& grad);

// One step: `params` updated in place from `grad` at learning rate `lr`; `step` counts from 1
// (Adam's bias correction); `state` holds stateTensors() buffers, or none before the first step
// (they are created then).
Expected<void> optimizerStep(const OptimizerSpec& spec, double lr, std::int64_t step,
                             core::Tensor& params, const core::Tensor& grad,
                             std::vector<core::Tensor>& state);

} // namespace goblin::labnode
