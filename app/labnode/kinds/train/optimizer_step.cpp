#include "kinds/train/optimizer_step.hpp"

#include <cmath>

namespace goblin::labnode {
namespace {

Expected<core::Tensor> zerosLike(const core::Tensor& like) {
    auto zeros = core::Tensor::allocate(like.dtype(), like.shape());
    if (zeros)
        std::fill(zeros->values<float>().begin(), zeros->values<float>().end(), 0.0f);
    return zeros;
}

void sgd(const OptimizerSpec& spec, float lr, std::span<float> p, std::span<const float> g,
         std::vector<core::Tensor>& state, bool fresh) {
    const auto wd = static_cast<float>(spec.weightDecay);
    const auto momentum = static_cast<float>(spec.momentum);
    const auto keep = static_cast<float>(1.0 - spec.dampening);
    std::span<float> buf = spec.momentum != 0 ? state.at(0).values<float>() : std::span<float>{};
    for (std::size_t i = 0; i < p.size(); ++i) {
        float d = spec.weightDecay != 0 ? g[i] + wd * p[i] : g[i];
        if (spec.momentum != 0) {
            buf[i] = fresh ? d : buf[i] * momentum + keep * d;
            d = spec.nesterov ? d + momentum * buf[i] : buf[i];
        }
        p[i] -= lr * d;
    }
}

void adam(const OptimizerSpec& spec, double lr, std::int64_t step, std::span<float> p,
          std::span<const float> g, std::vector<core::Tensor>& state) {
    const auto b1 = static_cast<float>(spec.beta1), b2 = static_cast<float>(spec.beta2);
    const auto one1 = static_cast<float>(1.0 - spec.beta1);
    const auto one2 = static_cast<float>(1.0 - spec.beta2);
    const auto wd = static_cast<float>(spec.weightDecay);
    const auto decay =
        static_cast<float>(1.0 - static_cast<double>(static_cast<float>(lr)) * spec.weightDecay);
    const auto stepSize =
        static_cast<float>(lr / (1.0 - std::pow(spec.beta1, static_cast<double>(step))));
    const auto correction2 =
        static_cast<float>(std::sqrt(1.0 - std::pow(spec.beta2, static_cast<double>(step))));
    const auto eps = static_cast<float>(spec.eps);
    std::span<float> m = state.at(0).values<float>(), v = state.at(1).values<float>();
    const bool decoupled = spec.kind == OptimizerSpec::Kind::AdamW;
    for (std::size_t i = 0; i < p.size(); ++i) {
        float grad = g[i];
        if (decoupled)
            p[i] *= decay;
        else if (spec.weightDecay != 0)
            grad = grad + wd * p[i];
        m[i] = m[i] * b1 + one1 * grad;
        v[i] = v[i] * b2 + one2 * (grad * grad);
        const float denom = std::sqrt(v[i]) / correction2 + eps;
        p[i] -= stepSize * (m[i] / denom);
    }
}

} // namespace

std::size_t OptimizerSpec::stateTensors() const {
    if (kind != Kind::Sgd)
        return 2;
    return momentum != 0 ? 1 : 0;
}

double gradNorm(const core::Tensor& grad) {
    double sum = 0;
    for (float value : grad.values<float>())
        sum += static_cast<double>(value) * static_cast<double>(value);
    return std::sqrt(sum);
}

double clipGradNorm(core::Tensor& grad, double maxNorm) {
    const double norm = gradNorm(grad);
    const float total = static_cast<float>(norm);
    const float coefficient = std::min(static_cast<float>(maxNorm) / (total + 1e-6f), 1.0f);
    for (float& value : grad.values<float>())
        value *= coefficient;
    return norm;
}

Expected<void> optimizerStep(const OptimizerSpec& spec, double lr, std::int64_t step,
                             core::Tensor& params, const core::Tensor& grad,
                             std::vector<core::Tensor>& state) {
    if (params.dtype() != core::DType::F32 || grad.dtype() != core::DType::F32 ||
        params.shape() != grad.shape())
        return makeError(ErrorCode::Internal, "the gradient does not match the parameters");
    const bool fresh = state.empty();
    if (fresh) {
        for (std::size_t i = 0; i < spec.stateTensors(); ++i) {
            // SGD's momentum buffer becomes the first step's direction; Adam's moments start at 0.
            auto buffer = zerosLike(grad);
            if (!buffer)
                return tl::unexpected(buffer.error());
            state.push_back(std::move(*buffer));
        }
    }
    if (state.size() != spec.stateTensors())
        return makeError(ErrorCode::Internal, "the optimizer state has the wrong tensor count");
    for (const core::Tensor& buffer : state)
        if (buffer.shape() != params.shape() || buffer.dtype() != core::DType::F32)
            return makeError(ErrorCode::Internal, "the optimizer state does not match");
    if (spec.kind == OptimizerSpec::Kind::Sgd)
        sgd(spec, static_cast<float>(lr), params.values<float>(), grad.values<float>(), state,
            fresh);
    else
        adam(spec, lr, step, params.values<float>(), grad.values<float>(), state);
    return {};
}

} // namespace goblin::labnode
