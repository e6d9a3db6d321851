// Tests of the node's optimizer step (kinds/train/optimizer_step) one step at a time: every
// optimizer a plan offers (SGD plain, with L2 weight decay, momentum, dampening and Nesterov; Adam
// with L2 weight decay; AdamW with decoupled decay) takes each step on random tensors as a float64
// recomputation of torch.optim's documented formulas does, within float32 rounding, its state
// buffers included, from a fresh start and resumed from given buffers at a later step count;
// mismatched inputs are refused with nothing touched; the gradient's norm is summed in float64 and
// clipping follows clip_grad_norm_ (scaled to the maximum above it, left alone below it).
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kinds/train/optimizer_step.hpp"
#include "support/tensor_bits.hpp"

using goblin::ErrorCode;
using goblin::core::DType;
using goblin::core::Tensor;
using goblin::testing::deepCopy;
using goblin::testing::sameBits;
using goblin::testing::uniformTensor;
namespace lab = goblin::labnode;
using Kind = lab::OptimizerSpec::Kind;

namespace {

constexpr double kFloatUnit = 0x1p-24; // float32's unit roundoff

// A step's float32 result may differ from the float64 formula by this many unit roundoffs of the
// magnitudes of the terms that made it: every float32 operation on the way (a product, a sum, a
// square root, a division) and every coefficient rounded to float32 (lr, the betas and 1 − beta,
// 1 − dampening, the bias corrections, Adam's step size, AdamW's decay factor) adds at most one
// unit of those magnitudes, and no path through a step has more than about 12 of them. A wrong
// formula (a missing bias correction, dampening, decay or Nesterov term) errs by a share of the
// update itself, which each step checks is thousands of times this bound.
constexpr double kRoundings = 16;

// Every byte 0x3c: a tensor of `dtype` whose values are not a step's.
Tensor filled(DType dtype, std::int64_t n) {
    Tensor t = Tensor::allocate(dtype, {n}).value();
    std::fill(t.bytes().begin(), t.bytes().end(), std::byte{0x3c});
    return t;
}

std::vector<double> doubles(const Tensor& t) {
    const auto values = t.values<float>();
    return {values.begin(), values.end()};
}

// What one step of torch.optim should give, in float64, and beside each value the sum of the
// magnitudes of the terms that made it (float32 rounding errors are proportional to it).
struct ReferenceStep {
    std::vector<double> params, paramsScale;
    std::vector<double> first, firstScale;   // momentum_buffer, or Adam's exp_avg
    std::vector<double> second, secondScale; // Adam's exp_avg_sq
};

// torch.optim.SGD's single-tensor step: d = g + wd·p; with momentum, buf = d on the first step
// (no dampening) and momentum·buf + (1 − dampening)·d after; Nesterov steps along d + momentum·buf,
// otherwise along buf; p −= lr·d.
void sgdReference(const lab::OptimizerSpec& spec, double lr, const std::vector<double>& p,
                  const std::vector<double>& g, const std::vector<std::vector<double>>& state,
                  ReferenceStep& out) {
    for (std::size_t i = 0; i < p.size(); ++i) {
        double d = g[i] + spec.weightDecay * p[i];
        double dAbs = std::abs(g[i]) + spec.weightDecay * std::abs(p[i]);
        if (spec.momentum != 0) {
            double buf = d, bufAbs = dAbs;
            if (!state.empty()) {
                buf = spec.momentum * state[0][i] + (1 - spec.dampening) * d;
                bufAbs = spec.momentum * std::abs(state[0][i]) + (1 - spec.dampening) * dAbs;
            }
            out.first[i] = buf;
            out.firstScale[i] = bufAbs;
            d = spec.nesterov ? d + spec.momentum * buf : buf;
            dAbs = spec.nesterov ? dAbs + spec.momentum * bufAbs : bufAbs;
        }
        out.params[i] = p[i] - lr * d;
        out.paramsScale[i] = std::abs(p[i]) + lr * dAbs;
    }
}

// torch.optim.Adam's and AdamW's single-tensor step at step count t (from 1): AdamW first decays
// p by (1 − lr·wd), Adam adds wd·p to the gradient; m = β1·m + (1 − β1)·g, v = β2·v + (1 − β2)·g²,
// p −= lr / (1 − β1^t) · m / (√v / √(1 − β2^t) + eps); the moments start at 0.
void adamReference(const lab::OptimizerSpec& spec, double lr, std::int64_t step,
                   const std::vector<double>& p, const std::vector<double>& g,
                   const std::vector<std::vector<double>>& state, ReferenceStep& out) {
    const double t = static_cast<double>(step);
    const double stepSize = lr / (1 - std::pow(spec.beta1, t));
    const double correction2 = std::sqrt(1 - std::pow(spec.beta2, t));
    for (std::size_t i = 0; i < p.size(); ++i) {
        double param = p[i], grad = g[i], gradAbs = std::abs(g[i]);
        if (spec.kind == Kind::AdamW) {
            param *= 1 - lr * spec.weightDecay;
        } else {
            grad += spec.weightDecay * p[i];
            gradAbs += spec.weightDecay * std::abs(p[i]);
        }
        const double m0 = state.empty() ? 0 : state[0][i];
        const double v0 = state.empty() ? 0 : state[1][i];
        const double m = spec.beta1 * m0 + (1 - spec.beta1) * grad;
        const double mAbs = spec.beta1 * std::abs(m0) + (1 - spec.beta1) * gradAbs;
        const double v = spec.beta2 * v0 + (1 - spec.beta2) * grad * grad;
        const double vAbs = spec.beta2 * v0 + (1 - spec.beta2) * gradAbs * gradAbs;
        const double denom = std::sqrt(v) / correction2 + spec.eps;
        out.first[i] = m;
        out.firstScale[i] = mAbs;
        out.second[i] = v;
        out.secondScale[i] = vAbs;
        out.params[i] = param - stepSize * m / denom;
        // m / denom errs relatively by m's error and half of v's (the square root).
        const double vRatio = v > 0 ? vAbs / v : 1;
        out.paramsScale[i] = std::abs(p[i]) + stepSize * (mAbs + std::abs(m) * vRatio) / denom;
    }
}

ReferenceStep referenceStep(const lab::OptimizerSpec& spec, double lr, std::int64_t step,
                            const std::vector<double>& p, const std::vector<double>& g,
                            const std::vector<std::vector<double>>& state) {
    const std::vector<double> zeros(p.size(), 0);
    ReferenceStep out{p, zeros, zeros, zeros, zeros, zeros};
    if (spec.kind == Kind::Sgd)
        sgdReference(spec, lr, p, g, state, out);
    else
        adamReference(spec, lr, step, p, g, state, out);
    return out;
}

// Every element of `got` within kRoundings unit roundoffs of its scale from `want`.
void compareWithin(const Tensor& got, const std::vector<double>& want,
                   const std::vector<double>& scale, const char* what, std::int64_t step) {
    const auto values = got.values<float>();
    QCOMPARE(values.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double error = std::abs(static_cast<double>(values[i]) - want[i]);
        QVERIFY2(error <= kRoundings * kFloatUnit * scale[i],
                 qPrintable(QString("step %1, %2[%3]: %4 vs %5 (%6 unit roundoffs of %7)")
                                .arg(step)
                                .arg(what)
                                .arg(i)
                                .arg(static_cast<double>(values[i]), 0, 'g', 10)
                                .arg(want[i], 0, 'g', 10)
                                .arg(error / (kFloatUnit * scale[i]))
                                .arg(scale[i])));
    }
}

// Takes five steps from `params` and `state` (empty: a fresh start) at step counts firstStep…,
// each on a new random gradient at its own learning rate, and compares each with referenceStep
// from the float32 values before it, so every step is checked at float32's rounding.
void checkSteps(const lab::OptimizerSpec& spec, std::size_t buffers, std::mt19937& gen,
                Tensor& params, std::vector<Tensor>& state, std::int64_t firstStep) {
    const std::int64_t n = params.elementCount();
    for (std::int64_t s = 0; s < 5; ++s) {
        const std::int64_t step = firstStep + s;
        const double lr = 0.05 / (1.0 + 0.5 * static_cast<double>(s)); // a decaying schedule
        const Tensor grad = uniformTensor(gen, n, -1, 1);
        const Tensor gradBefore = deepCopy(grad);
        const std::vector<double> paramsBefore = doubles(params);
        std::vector<std::vector<double>> stateBefore;
        for (const Tensor& buffer : state)
            stateBefore.push_back(doubles(buffer));
        const ReferenceStep want =
            referenceStep(spec, lr, step, paramsBefore, doubles(grad), stateBefore);

        auto stepped = lab::optimizerStep(spec, lr, step, params, grad, state);
        QVERIFY2(stepped.has_value(), stepped ? "" : stepped.error().message.c_str());
        QVERIFY(sameBits(grad, gradBefore));
        QCOMPARE(state.size(), buffers);
        for (const Tensor& buffer : state) {
            QCOMPARE(buffer.dtype(), DType::F32);
            QCOMPARE(buffer.shape(), params.shape());
        }
        compareWithin(params, want.params, want.paramsScale, "params", step);
        if (buffers >= 1)
            compareWithin(state[0], want.first, want.firstScale, "first buffer", step);
        if (buffers == 2)
            compareWithin(state[1], want.second, want.secondScale, "second buffer", step);
        if (QTest::currentTestFailed())
            return; // one failed step is enough: the next ones start from its values
        // The step moved the parameters by far more than the tolerance: a comparison that would
        // also pass for a wrong formula or no step at all checks nothing.
        double moved = 0, tolerance = 0;
        for (std::size_t i = 0; i < paramsBefore.size(); ++i) {
            moved = std::max(moved, std::abs(want.params[i] - paramsBefore[i]));
            tolerance = std::max(tolerance, kRoundings * kFloatUnit * want.paramsScale[i]);
        }
        QVERIFY2(moved > 1000 * tolerance,
                 qPrintable(QString("moved %1, tolerance %2").arg(moved).arg(tolerance)));
    }
}

lab::OptimizerSpec specFromRow() {
    QFETCH(int, kind);
    QFETCH(double, momentum);
    QFETCH(double, dampening);
    QFETCH(bool, nesterov);
    QFETCH(double, weightDecay);
    QFETCH(double, beta1);
    QFETCH(double, beta2);
    QFETCH(double, eps);
    lab::OptimizerSpec spec;
    spec.kind = static_cast<Kind>(kind);
    spec.momentum = momentum;
    spec.dampening = dampening;
    spec.nesterov = nesterov;
    spec.weightDecay = weightDecay;
    spec.beta1 = beta1;
    spec.beta2 = beta2;
    spec.eps = eps;
    return spec;
}

// Every optimizer and option the plan offers (train_submission.cpp: sgd, adam, adamw), with the
// number of buffers torch.optim keeps for it.
void addOptimizerRows() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<double>("momentum");
    QTest::addColumn<double>("dampening");
    QTest::addColumn<bool>("nesterov");
    QTest::addColumn<double>("weightDecay");
    QTest::addColumn<double>("beta1");
    QTest::addColumn<double>("beta2");
    QTest::addColumn<double>("eps");
    QTest::addColumn<int>("buffers");
    const int sgd = int(Kind::Sgd), adam = int(Kind::Adam), adamw = int(Kind::AdamW);
    QTest::newRow("sgd") << sgd << 0.0 << 0.0 << false << 0.0 << 0.9 << 0.999 << 1e-8 << 0;
    QTest::newRow("sgd weight decay")
        << sgd << 0.0 << 0.0 << false << 0.1 << 0.9 << 0.999 << 1e-8 << 0;
    QTest::newRow("sgd momentum") << sgd << 0.9 << 0.0 << false << 0.0 << 0.9 << 0.999 << 1e-8 << 1;
    QTest::newRow("sgd momentum dampening weight decay")
        << sgd << 0.8 << 0.3 << false << 0.05 << 0.9 << 0.999 << 1e-8 << 1;
    QTest::newRow("sgd nesterov weight decay")
        << sgd << 0.9 << 0.0 << true << 0.05 << 0.9 << 0.999 << 1e-8 << 1;
    QTest::newRow("adam") << adam << 0.0 << 0.0 << false << 0.0 << 0.9 << 0.999 << 1e-8 << 2;
    QTest::newRow("adam l2 weight decay")
        << adam << 0.0 << 0.0 << false << 0.1 << 0.9 << 0.999 << 1e-8 << 2;
    QTest::newRow("adam other betas, an eps that matters")
        << adam << 0.0 << 0.0 << false << 0.0 << 0.8 << 0.95 << 1e-2 << 2;
    QTest::newRow("adamw") << adamw << 0.0 << 0.0 << false << 0.1 << 0.9 << 0.999 << 1e-8 << 2;
    QTest::newRow("adamw other betas, strong decay")
        << adamw << 0.0 << 0.0 << false << 0.3 << 0.5 << 0.9 << 1e-6 << 2;
}

// The gradient's 2-norm summed in float64 in another order (pairwise), for comparison.
double pairwiseNorm(const Tensor& grad) {
    std::vector<double> squares;
    for (float value : grad.values<float>())
        squares.push_back(static_cast<double>(value) * static_cast<double>(value));
    while (squares.size() > 1) {
        std::vector<double> halved;
        for (std::size_t i = 0; i < squares.size(); i += 2)
            halved.push_back(squares[i] + (i + 1 < squares.size() ? squares[i + 1] : 0.0));
        squares = std::move(halved);
    }
    return squares.empty() ? 0.0 : std::sqrt(squares[0]);
}

// Two float64 sums of n positive terms in different orders agree within 2n unit roundoffs
// (float64's, 2^−53) of the sum: far tighter than a float32 sum could get.
bool sameNorm(double got, double want, std::size_t n) {
    return std::abs(got - want) <= 2.0 * static_cast<double>(n) * 0x1p-53 * want;
}

} // namespace

class TestOptimizerStep : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void eachStepFromAFreshStartIsTorchsFormulaWithinFloat32Rounding_data();
    void eachStepFromAFreshStartIsTorchsFormulaWithinFloat32Rounding();
    void aResumedStepContinuesFromTheGivenBuffersAndStepCount_data();
    void aResumedStepContinuesFromTheGivenBuffersAndStepCount();
    void theFirstMomentumStepTakesTheGradientUndampenedAsItsBuffer();
    void mismatchedInputsAreRefusedWithNothingTouched();
    void theGradientNormIsSummedInFloat64();
    void clippingAboveTheMaximumScalesTheGradientToIt();
    void clippingBelowTheMaximumLeavesTheGradientAlone();
};

void TestOptimizerStep::eachStepFromAFreshStartIsTorchsFormulaWithinFloat32Rounding_data() {
    addOptimizerRows();
}

void TestOptimizerStep::eachStepFromAFreshStartIsTorchsFormulaWithinFloat32Rounding() {
    const lab::OptimizerSpec spec = specFromRow();
    QFETCH(int, buffers);
    QCOMPARE(spec.stateTensors(), static_cast<std::size_t>(buffers));
    std::mt19937 gen(20240611);
    Tensor params = uniformTensor(gen, 97, -2, 2);
    std::vector<Tensor> state; // a fresh start: the step creates the buffers
    checkSteps(spec, static_cast<std::size_t>(buffers), gen, params, state, 1);
}

void TestOptimizerStep::aResumedStepContinuesFromTheGivenBuffersAndStepCount_data() {
    addOptimizerRows();
}

void TestOptimizerStep::aResumedStepContinuesFromTheGivenBuffersAndStepCount() {
    const lab::OptimizerSpec spec = specFromRow();
    QFETCH(int, buffers);
    std::mt19937 gen(7);
    Tensor params = uniformTensor(gen, 61, -2, 2);
    // Buffers as an earlier run left them (exp_avg_sq is never negative); step counts from 7 on,
    // where Adam's bias corrections differ from a fresh start's.
    std::vector<Tensor> state;
    for (int i = 0; i < buffers; ++i)
        state.push_back(i == 1 ? uniformTensor(gen, 61, 0.01, 0.5)
                               : uniformTensor(gen, 61, -0.5, 0.5));
    checkSteps(spec, static_cast<std::size_t>(buffers), gen, params, state, 7);
}

void TestOptimizerStep::theFirstMomentumStepTakesTheGradientUndampenedAsItsBuffer() {
    // torch.optim.SGD: buf = clone(d) when there is no momentum_buffer yet; dampening applies
    // only from the second step on.
    for (const bool nesterov : {false, true}) {
        lab::OptimizerSpec spec;
        spec.momentum = 0.9;
        spec.dampening = nesterov ? 0.0 : 0.5; // torch refuses Nesterov with dampening
        spec.nesterov = nesterov;
        std::mt19937 gen(nesterov ? 3 : 4);
        Tensor params = uniformTensor(gen, 40, -1, 1);
        const Tensor grad = uniformTensor(gen, 40, -1, 1);
        std::vector<Tensor> state;
        QVERIFY(lab::optimizerStep(spec, 0.1, 1, params, grad, state).has_value());
        QCOMPARE(state.size(), std::size_t{1});
        QVERIFY2(sameBits(state[0], grad), nesterov ? "nesterov" : "dampened");
        // The second step dampens: the buffer is no longer the sum of the gradients.
        const Tensor grad2 = uniformTensor(gen, 40, -1, 1);
        const std::vector<double> buf = doubles(state[0]);
        QVERIFY(lab::optimizerStep(spec, 0.1, 2, params, grad2, state).has_value());
        for (std::size_t i = 0; i < buf.size(); ++i) {
            const double want = 0.9 * buf[i] + (1 - spec.dampening) * grad2.values<float>()[i];
            QVERIFY(std::abs(state[0].values<float>()[i] - want) <=
                    kRoundings * kFloatUnit * (std::abs(buf[i]) + 1));
        }
    }
}

void TestOptimizerStep::mismatchedInputsAreRefusedWithNothingTouched() {
    lab::OptimizerSpec adam;
    adam.kind = Kind::Adam;
    lab::OptimizerSpec momentum;
    momentum.momentum = 0.9;
    const lab::OptimizerSpec plain;
    std::mt19937 gen(11);
    const Tensor params = uniformTensor(gen, 8, -1, 1);
    const Tensor grad = uniformTensor(gen, 8, -1, 1);
    const Tensor buffer = uniformTensor(gen, 8, 0.1, 1);
    struct Case {
        const char* name;
        const lab::OptimizerSpec& spec;
        Tensor params, grad;
        std::vector<Tensor> state;
    };
    const std::vector<Case> cases{
        {"a gradient of another shape", adam, params, uniformTensor(gen, 9, -1, 1), {}},
        {"a float64 gradient", adam, params, filled(DType::F64, 8), {}},
        {"float64 parameters", plain, filled(DType::F64, 8), grad, {}},
        {"adam with one buffer", adam, params, grad, {buffer}},
        {"momentum with two buffers", momentum, params, grad, {buffer, buffer}},
        {"plain sgd with a buffer", plain, params, grad, {buffer}},
        {"a float64 buffer", adam, params, grad, {buffer, filled(DType::F64, 8)}},
    };
    for (const Case& bad : cases) {
        Tensor p = deepCopy(bad.params);
        std::vector<Tensor> state;
        for (const Tensor& b : bad.state)
            state.push_back(deepCopy(b));
        auto refused = lab::optimizerStep(bad.spec, 0.1, 1, p, bad.grad, state);
        QVERIFY2(!refused.has_value(), bad.name);
        QCOMPARE(refused.error().code, ErrorCode::Internal);
        QVERIFY2(sameBits(p, bad.params), bad.name);
        QCOMPARE(state.size(), bad.state.size());
        for (std::size_t i = 0; i < state.size(); ++i)
            QVERIFY2(sameBits(state[i], bad.state[i]), bad.name);
    }
}

void TestOptimizerStep::theGradientNormIsSummedInFloat64() {
    std::mt19937 gen(5);
    const Tensor grad = uniformTensor(gen, 1000, -3, 3);
    QVERIFY(sameNorm(lab::gradNorm(grad), pairwiseNorm(grad), 1000));
    // Squares a float32 sum could not hold: 1e30² overflows it, 1e-30² underflows it to 0.
    for (const double magnitude : {1e30, 1e-30}) {
        Tensor extreme = uniformTensor(gen, 100, 0.5, 1);
        for (float& value : extreme.values<float>())
            value = static_cast<float>(value * magnitude);
        const double norm = lab::gradNorm(extreme);
        QVERIFY(std::isfinite(norm) && norm > 0);
        QVERIFY2(sameNorm(norm, pairwiseNorm(extreme), 100),
                 qPrintable(QString("%1 vs %2").arg(norm).arg(pairwiseNorm(extreme))));
    }
    QCOMPARE(lab::gradNorm(Tensor::allocate(DType::F32, {0}).value()), 0.0);
}

void TestOptimizerStep::clippingAboveTheMaximumScalesTheGradientToIt() {
    std::mt19937 gen(17);
    for (const double maxNorm : {0.75, 1.0, 5.0}) {
        Tensor grad = uniformTensor(gen, 200, -1, 1);
        for (float& value : grad.values<float>())
            value *= 3; // a norm of about 24
        const Tensor before = deepCopy(grad);
        const double norm = pairwiseNorm(before);
        QVERIFY(norm > 4 * maxNorm);
        const double returned = lab::clipGradNorm(grad, maxNorm);
        QVERIFY(sameNorm(returned, norm, 200)); // the norm before clipping
        // clip_grad_norm_: every element times maxNorm / (norm + 1e-6), in float32 (a handful of
        // roundings: the two operands, the sum, the quotient, the product).
        const double coefficient = maxNorm / (norm + 1e-6);
        for (std::size_t i = 0; i < 200; ++i) {
            const double want = before.values<float>()[i] * coefficient;
            QVERIFY2(
                std::abs(grad.values<float>()[i] - want) <= 8 * kFloatUnit * std::abs(want),
                qPrintable(
                    QString("element %1: %2 vs %3").arg(i).arg(grad.values<float>()[i]).arg(want)));
        }
        const double clipped = pairwiseNorm(grad);
        QVERIFY2(std::abs(clipped - maxNorm * norm / (norm + 1e-6)) <= 8 * kFloatUnit * maxNorm,
                 qPrintable(QString("clipped to %1, not %2").arg(clipped).arg(maxNorm)));
    }
}

void TestOptimizerStep::clippingBelowTheMaximumLeavesTheGradientAlone() {
    std::mt19937 gen(19);
    const Tensor grad = uniformTensor(gen, 150, -1, 1);
    const double norm = pairwiseNorm(grad);
    // Well below, and just below: (norm + 1e-3) / (norm + 1e-6) is above 1, so clamped to 1.
    for (const double maxNorm : {2 * norm, norm + 1e-3, 1e6}) {
        Tensor clipped = deepCopy(grad);
        QVERIFY(sameNorm(lab::clipGradNorm(clipped, maxNorm), norm, 150));
        QVERIFY2(sameBits(clipped, grad), qPrintable(QString("max norm %1").arg(maxNorm)));
    }
}

QTEST_APPLESS_MAIN(TestOptimizerStep)
#include "test_optimizer_step.moc"
