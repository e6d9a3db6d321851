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

// Rows go eight at a time: each row's sums run in its own order (so the bits are one row's loop),
// but eight chains advance together instead of each add waiting on the one before it.
constexpr std::int64_t kRowGroup = 8;

// The moments of rows x, x + k, … (`rows` of them, at most kRowGroup).
template <class T, class Rows>
void groupMoments(const T* x, std::int64_t k, T eps, Rows rows, RowMoments<T>* moments) {
    T sum[kRowGroup] = {};
    for (std::int64_t j = 0; j < k; ++j)
        for (std::int64_t g = 0; g < rows; ++g)
            sum[g] = sum[g] + x[g * k + j];
    for (std::int64_t g = 0; g < rows; ++g)
        moments[g].mean = sum[g] / static_cast<T>(k);
    T squares[kRowGroup] = {};
    for (std::int64_t j = 0; j < k; ++j)
        for (std::int64_t g = 0; g < rows; ++g)
            squares[g] =
                squares[g] + (x[g * k + j] - moments[g].mean) * (x[g * k + j] - moments[g].mean);
    for (std::int64_t g = 0; g < rows; ++g)
        moments[g].rstd = T(1) / std::sqrt(squares[g] / static_cast<T>(k) + eps);
}

// Calls perGroup(first row, rows) for every group of rows, `rows` a constant for full groups (so
// that their chains stay in registers).
template <class PerGroup> void forRowGroups(std::int64_t rows, PerGroup perGroup) {
    std::int64_t r = 0;
    for (; r + kRowGroup <= rows; r += kRowGroup)
        perGroup(r, std::integral_constant<std::int64_t, kRowGroup>{});
    if (r < rows)
        perGroup(r, rows - r);
}

// y = ((x − mean)·rstd)·w + b, mean = Σx/K, var = Σ(x − mean)²/K, rstd = 1/√(var + eps).
template <class T> void layerNorm(Args args, std::int64_t k, T eps, Tensor& out) {
    const T* x = args[0].values<T>().data();
    const T* w = args[1].values<T>().data();
    const T* b = args[2].values<T>().data();
    T* y = out.values<T>().data();
    const std::int64_t rows = k == 0 ? 0 : args[0].elementCount() / k;
    forRowGroups(rows, [&](std::int64_t first, auto count) {
        RowMoments<T> m[kRowGroup];
        groupMoments(x + first * k, k, eps, count, m);
        for (std::int64_t g = 0; g < count; ++g) {
            const T* row = x + (first + g) * k;
            T* to = y + (first + g) * k;
            for (std::int64_t j = 0; j < k; ++j)
                to[j] = (row[j] - m[g].mean) * m[g].rstd * w[j] + b[j];
        }
    });
}

// input: dx = rstd·(g·w − Σ(g·w)/K − x̂·Σ(g·w·x̂)/K); weight: Σ_rows g·x̂; bias: Σ_rows g (rows
// in order).
template <class T>
void layerNormBackward(Args args, std::int64_t k, T eps, const std::string& output, Tensor& out) {
    const T* g = args[0].values<T>().data();
    const T* x = args[1].values<T>().data();
    const T* w = args[2].values<T>().data();
    T* result = out.values<T>().data();
    const std::int64_t rows = k == 0 ? 0 : args[1].elementCount() / k;
    if (output == "bias") {
        for (std::int64_t j = 0; j < k; ++j)
            result[j] = 0;
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t j = 0; j < k; ++j)
                result[j] = result[j] + g[r * k + j];
        return;
    }
    if (output == "weight")
        for (std::int64_t j = 0; j < k; ++j)
            result[j] = 0;
    forRowGroups(rows, [&](std::int64_t first, auto count) {
        RowMoments<T> m[kRowGroup];
        groupMoments(x + first * k, k, eps, count, m);
        const T* rowsX = x + first * k;
        const T* rowsG = g + first * k;
        if (output == "weight") {
            for (std::int64_t r = 0; r < count; ++r)
                for (std::int64_t j = 0; j < k; ++j)
                    result[j] =
                        result[j] + rowsG[r * k + j] * ((rowsX[r * k + j] - m[r].mean) * m[r].rstd);
            return;
        }
        T sumDy[kRowGroup] = {}, sumDyXhat[kRowGroup] = {};
        for (std::int64_t j = 0; j < k; ++j)
            for (std::int64_t r = 0; r < count; ++r) {
                const T dy = rowsG[r * k + j] * w[j];
                sumDy[r] = sumDy[r] + dy;
                sumDyXhat[r] = sumDyXhat[r] + dy * ((rowsX[r * k + j] - m[r].mean) * m[r].rstd);
            }
        for (std::int64_t r = 0; r < count; ++r) {
            const T meanDy = sumDy[r] / static_cast<T>(k);
            const T meanDyXhat = sumDyXhat[r] / static_cast<T>(k);
            T* to = result + (first + r) * k;
            for (std::int64_t j = 0; j < k; ++j) {
                const T xhat = (rowsX[r * k + j] - m[r].mean) * m[r].rstd;
                to[j] = (rowsG[r * k + j] * w[j] - meanDy - xhat * meanDyXhat) * m[r].rstd;
            }
        }
    });
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
