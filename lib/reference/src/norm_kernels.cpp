// Reference kernels of layer_norm and layer_norm_backward. Per row of K normalised elements, in
// the input dtype: mean = Σx/K, var = Σ(x − mean)²/K (two passes, biased), rstd = 1/√(var + eps),
// all sums sequential in C order.
#include <cmath>
#include <string>

#include "kernels.hpp"

namespace goblin::reference::detail {
namespace {

template <class T> struct RowMoments {
    T mean;
    T rstd;
};

template <class T> RowMoments<T> moments(const T* row, std::int64_t k, T eps) {
    T sum = 0;
    for (std::int64_t j = 0; j < k; ++j)
        sum = sum + row[j];
    const T mean = sum / static_cast<T>(k);
    T squares = 0;
    for (std::int64_t j = 0; j < k; ++j)
        squares = squares + (row[j] - mean) * (row[j] - mean);
    const T var = squares / static_cast<T>(k);
    return {mean, T(1) / std::sqrt(var + eps)};
}

// y = ((x − mean)·rstd)·w + b.
template <class T> void layerNorm(Args args, std::int64_t k, T eps, Tensor& out) {
    const T* x = args[0].values<T>().data();
    const T* w = args[1].values<T>().data();
    const T* b = args[2].values<T>().data();
    T* y = out.values<T>().data();
    const std::int64_t rows = k == 0 ? 0 : args[0].elementCount() / k;
    for (std::int64_t r = 0; r < rows; ++r) {
        const T* row = x + r * k;
        const auto m = moments(row, k, eps);
        for (std::int64_t j = 0; j < k; ++j)
            y[r * k + j] = (row[j] - m.mean) * m.rstd * w[j] + b[j];
    }
}

// input: dx = rstd·(g·w − Σ(g·w)/K − x̂·Σ(g·w·x̂)/K); weight: Σ_rows g·x̂; bias: Σ_rows g.
template <class T>
void layerNormBackward(Args args, std::int64_t k, T eps, const std::string& output, Tensor& out) {
    const T* g = args[0].values<T>().data();
    const T* x = args[1].values<T>().data();
    const T* w = args[2].values<T>().data();
    T* result = out.values<T>().data();
    const std::int64_t rows = k == 0 ? 0 : args[1].elementCount() / k;
    if (output != "input")
        for (std::int64_t j = 0; j < k; ++j)
            result[j] = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
        const T* row = x + r * k;
        const T* grad = g + r * k;
        const auto m = moments(row, k, eps);
        if (output == "bias") {
            for (std::int64_t j = 0; j < k; ++j)
                result[j] = result[j] + grad[j];
            continue;
        }
        if (output == "weight") {
            for (std::int64_t j = 0; j < k; ++j)
                result[j] = result[j] + grad[j] * ((row[j] - m.mean) * m.rstd);
            continue;
        }
        T sumDy = 0, sumDyXhat = 0;
        for (std::int64_t j = 0; j < k; ++j) {
            const T dy = grad[j] * w[j];
            sumDy = sumDy + dy;
            sumDyXhat = sumDyXhat + dy * ((row[j] - m.mean) * m.rstd);
        }
        const T meanDy = sumDy / static_cast<T>(k);
        const T meanDyXhat = sumDyXhat / static_cast<T>(k);
        for (std::int64_t j = 0; j < k; ++j) {
            const T xhat = (row[j] - m.mean) * m.rstd;
            result[r * k + j] = (grad[j] * w[j] - meanDy - xhat * meanDyXhat) * m.rstd;
        }
    }
}

} // namespace

Expected<Tensor> runNormOp(OpCode op, Args args, const Attributes& attrs, const TensorSpec& spec) {
    auto out = Tensor::allocate(spec.dtype, spec.shape);
    if (!out)
        return out;
    const std::int64_t ndim = core::ops::attrInt(attrs, "normalized_ndim", std::nullopt).value();
    const double eps = core::ops::attrOptionalNumber(attrs, "eps").value().value_or(1e-5);
    const Tensor& x = op == OpCode::LayerNorm ? args[0] : args[1];
    std::int64_t k = 1;
    for (std::size_t d = x.shape().size() - static_cast<std::size_t>(ndim); d < x.shape().size();
         ++d)
        k *= x.shape()[d];
    const std::string output = core::ops::attrString(attrs, "output", std::string("input")).value();
    visitDType(x.dtype(), [&](auto t) {
        using T = decltype(t);
        if constexpr (std::is_floating_point_v<T>) {
            if (op == OpCode::LayerNorm)
                layerNorm<T>(args, k, static_cast<T>(eps), *out);
            else
                layerNormBackward<T>(args, k, static_cast<T>(eps), output, *out);
        }
    });
    return out;
}

} // namespace goblin::reference::detail
