// What the training job tests share: docs/protocol.md's least-squares step (loss mean((x·w − y)²),
// gradient 2·mean((x·w − y)·x)) submitted with plain SGD, fake volunteers that answer its tasks
// with the reference executor (honestly, or with one gradient element off), and a float64
// recomputation of the same SGD rounds with a bound on float32's distance from it. The test's
// thread.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include "goblin/core/graph/graph_json.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "labnode/fake_answers.hpp"
#include "support/random_tensors.hpp"

namespace goblin::labnode::testing {

// d parameters, N samples, batches of B in micro-batches of m; lr are powers of two, so
// float32's lr·g is exact.
inline constexpr std::int64_t kDim = 3, kSamples = 16, kBatch = 8, kMicro = 4, kRounds = 3;
inline const std::vector<double> kRates{0.125, 0.125, 0.0625};

struct TrainData {
    core::Tensor params = goblin::testing::randomTensor(core::DType::F32, {kDim}, 31);
    core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kSamples, kDim}, 32, {0.25, 1.0});
    core::Tensor y = goblin::testing::randomTensor(core::DType::F32, {kSamples}, 33, {0.25, 2.0});
};

inline boost::json::value stepGraph() {
    namespace json = boost::json;
    const auto node = [](int id, const char* op, json::array args, json::object attrs = {}) {
        return json::object{{"id", id}, {"op", op}, {"args", args}, {"attrs", attrs}};
    };
    return json::object{
        {"catalog", 3},
        {"inputs",
         {{{"id", 0}, {"dtype", "f32"}, {"shape", {kDim}}},
          {{"id", 1}, {"dtype", "f32"}, {"shape", {kMicro, kDim}}},
          {{"id", 2}, {"dtype", "f32"}, {"shape", {kMicro}}}}},
        {"constants", json::array{}},
        {"nodes",
         {node(3, "mul", {1, 0}), node(4, "sum", {3}, {{"dims", {1}}}), node(5, "sub", {4, 2}),
          node(6, "mul", {5, 5}), node(7, "mean", {6}, {{"dims", {0}}}),
          node(8, "reshape", {5}, {{"shape", {kMicro, 1}}}), node(9, "mul", {8, 1}),
          node(10, "mean", {9}, {{"dims", {0}}}), node(11, "add", {10, 10})}},
        {"outputs", {7, 11}}};
}

// Rows [first, first + count) of a [rows] or [rows, cols] f32 tensor.
inline core::Tensor rowsOf(const core::Tensor& t, std::int64_t first, std::int64_t count) {
    core::Shape shape = t.shape();
    const std::int64_t width = t.elementCount() / shape[0];
    shape[0] = count;
    core::Tensor out = core::Tensor::allocate(core::DType::F32, shape).value();
    const auto from = t.values<float>().begin() + first * width;
    std::copy(from, from + count * width, out.values<float>().begin());
    return out;
}

// submit_train of kRounds rounds of SGD; streamed: x and y carry the first batch only.
inline net::Message submitTrain(const TrainData& data, bool streamed = false) {
    boost::json::object train{
        {"params", 0},
        {"data", {1, 2}},
        {"batch_size", kBatch},
        {"micro_batch", kMicro},
        {"rounds", kRounds},
        {"optimizer", {{"kind", "sgd"}, {"lr", boost::json::array(kRates.begin(), kRates.end())}}}};
    if (streamed)
        train["stream"] = true;
    const std::int64_t rows = streamed ? kBatch : kSamples;
    return net::Message{boost::json::object{{"type", "submit_train"},
                                            {"id", 5},
                                            {"tensors", 3},
                                            {"graph", stepGraph()},
                                            {"train", std::move(train)}},
                        {std::make_shared<const core::Tensor>(data.params),
                         std::make_shared<const core::Tensor>(rowsOf(data.x, 0, rows)),
                         std::make_shared<const core::Tensor>(rowsOf(data.y, 0, rows))}};
}

// The task's own graph on its tensors, by the reference executor (a canonical backend).
inline std::vector<core::Tensor> runTask(const net::Message& task) {
    return runTaskGraph(task);
}

inline net::Message answered(const net::Message& task, std::vector<core::Tensor> outputs) {
    return answerWith(task, std::move(outputs));
}

inline net::Message honestStep(const net::Message& task) {
    return answered(task, runTask(task));
}

// The loss right, gradient element 1 off by 0.25.
inline net::Message lyingStep(const net::Message& task) {
    std::vector<core::Tensor> outputs = runTask(task);
    outputs.at(1).values<float>()[1] += 0.25f;
    return answered(task, std::move(outputs));
}

inline std::vector<float> valuesOf(const core::Tensor& t) {
    return {t.values<float>().begin(), t.values<float>().end()};
}

// Round r's batch: samples (r·B + i) mod N, as the node takes them.
inline std::int64_t sampleOf(std::int64_t round, std::int64_t i) {
    return (round * kBatch + i) % kSamples;
}

// `rounds` SGD rounds in float64 from the f32 parameters, and per round the loss it starts from
// with a bound on float32's error in it; `bound` bounds |float32 run − this| per parameter after
// the last round. Float32's error, by the standard bounds (u = 2⁻²⁴, γn = n·u/(1 − n·u)), at the
// float32 parameters ŵ = w + e: a residual r̂ᵢ = xᵢ·ŵ − yᵢ is d products summed and one subtraction
// (γ(d+1)·Aᵢ, Aᵢ = Σk|xᵢk|(|wk| + ‖e‖∞) + |yᵢ|); its product with xᵢj, the micro-batch mean (m − 1
// additions, one division), the exact doubling and the merge's one rounding to f32 add m + 3
// roundings: |ĝj − gj(ŵ)| ≤ γn·(2/B)·Σᵢ 2Aᵢ|xᵢj| with n = d + m + 5 (one to spare; |rᵢ| ≤ Aᵢ). The
// step ŵ − lr·ĝ (lr·ĝ exact) rounds once: u·(|w| + ‖e‖∞ + lr|ĝ|). The error then evolves as e' = (I
// − lr·H)e − lr·δg + δstep, H = (2/B)·Σᵢ xᵢxᵢᵀ: ‖e'‖∞ ≤ (1 + lr‖H‖∞)‖e‖∞ + lr‖δg‖∞ + ‖δstep‖∞. The
// loss: the same residual errors squared and averaged, γn·(3/B)·ΣAᵢ², plus ‖∇L‖₁·‖e‖∞ +
// d²‖H‖∞‖e‖∞²/2 for starting from ŵ. float64's own rounding (~1e-16) is below all of these.
struct Float64Run {
    std::vector<double> params, losses, lossBounds;
    double bound = 0;
};

inline Float64Run sgdInFloat64(const TrainData& data, std::int64_t rounds) {
    constexpr double u = std::numeric_limits<float>::epsilon() / 2;
    const double n = kDim + kMicro + 5, gamma = n * u / (1 - n * u);
    const auto x = [&](std::int64_t i, std::int64_t j) {
        return double(data.x.values<float>()[std::size_t(i * kDim + j)]);
    };
    Float64Run run;
    for (float p : data.params.values<float>())
        run.params.push_back(p);
    for (std::int64_t r = 0; r < rounds; ++r) {
        std::vector<double> g(kDim, 0), gBound(kDim, 0), gradLoss(kDim, 0);
        double loss = 0, lossBound = 0, hessian = 0;
        for (std::int64_t i = 0; i < kBatch; ++i) {
            const std::int64_t s = sampleOf(r, i);
            const double yi = data.y.values<float>()[std::size_t(s)];
            double residual = -yi, a = std::abs(yi);
            for (std::int64_t k = 0; k < kDim; ++k) {
                residual += x(s, k) * run.params[std::size_t(k)];
                a += std::abs(x(s, k)) * (std::abs(run.params[std::size_t(k)]) + run.bound);
            }
            loss += residual * residual / kBatch;
            lossBound += gamma * 3 * a * a / kBatch;
            for (std::int64_t j = 0; j < kDim; ++j) {
                g[std::size_t(j)] += 2 * residual * x(s, j) / kBatch;
                gBound[std::size_t(j)] += gamma * 4 * a * std::abs(x(s, j)) / kBatch;
                gradLoss[std::size_t(j)] += 2 * std::abs(residual * x(s, j)) / kBatch;
            }
        }
        for (std::int64_t j = 0; j < kDim; ++j) { // ‖H‖∞: the largest row sum of |H|
            double row = 0;
            for (std::int64_t k = 0; k < kDim; ++k)
                for (std::int64_t i = 0; i < kBatch; ++i)
                    row += 2 * std::abs(x(sampleOf(r, i), j) * x(sampleOf(r, i), k)) / kBatch;
            hessian = std::max(hessian, row);
        }
        for (double partial : gradLoss)
            lossBound += partial * run.bound;
        lossBound += hessian * run.bound * run.bound / 2 * kDim * kDim;
        run.losses.push_back(loss);
        run.lossBounds.push_back(lossBound);
        const double lr = kRates.at(std::size_t(r));
        double stepBound = 0;
        for (std::size_t j = 0; j < run.params.size(); ++j) {
            stepBound = std::max(stepBound, u * (std::abs(run.params[j]) + run.bound +
                                                 lr * (std::abs(g[j]) + gBound[j])));
            run.params[j] -= lr * g[j];
        }
        run.bound = (1 + lr * hessian) * run.bound +
                    lr * *std::max_element(gBound.begin(), gBound.end()) + stepBound;
    }
    return run;
}

} // namespace goblin::labnode::testing
