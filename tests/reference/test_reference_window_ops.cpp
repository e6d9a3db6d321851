// Tests of the catalog 3 window and normalisation ops of the CPU reference executor: conv2d and its
// gradients (float64 recomputation and the adjoint identities), max_pool2d (NaN, −inf, padding,
// ceil_mode, overlapping windows) and layer_norm (float64 recomputation, finite differences).
#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

#include "goblin/core/ops/op_geometry.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "support/reference_op_helpers.hpp"

using namespace goblin::core;
using namespace goblin::core::ops;
using goblin::reference::runOp;
using namespace reference_test;

namespace {

double dot(const Tensor& a, const Tensor& b) {
    double sum = 0;
    for (std::size_t i = 0; i < a.values<double>().size(); ++i)
        sum += a.values<double>()[i] * b.values<double>()[i];
    return sum;
}

const Attributes kConv{{"stride", IntList{2, 1}},
                       {"padding", IntList{1, 2}},
                       {"dilation", IntList{1, 2}},
                       {"groups", std::int64_t{2}}};

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Geometries of the summation-order tests: input shape, the forward test's weight, the gradient
// tests' weight (40 output channels), and the attributes.
struct ConvCase {
    Shape input, forwardWeight, gradientWeight;
    Attributes attrs;
};
std::vector<ConvCase> convCases() {
    std::vector<ConvCase> cases;
    const std::vector<Attributes> geometries{
        kConv,
        {{"padding", IntList{1, 1}}},
        {{"stride", IntList{3, 2}}, {"padding", IntList{2, 0}}},
        {{"stride", IntList{2, 2}}, {"padding", IntList{1, 1}}, {"groups", std::int64_t{2}}},
        {{"dilation", IntList{2, 3}}, {"padding", IntList{3, 3}}, {"groups", std::int64_t{4}}}};
    for (const Attributes& attrs : geometries) {
        const std::int64_t groups =
            attrs.contains("groups") ? std::get<std::int64_t>(attrs.at("groups")) : 1;
        cases.push_back({{2, 8, 9, 11}, {8, 8 / groups, 3, 3}, {40, 8 / groups, 3, 3}, attrs});
    }
    cases.push_back({{2, 40, 9, 11}, {13, 40, 3, 3}, {40, 40, 3, 3}, {{"padding", IntList{1, 1}}}});
    return cases;
}

// The input position (iy, ix) that tap (ky, kx) of output (oy, ox) reads, or nullopt where it
// falls in the padding: docs/ops.md written out here, not the kernels' Conv2dTaps.
std::optional<std::array<std::int64_t, 2>> tapInput(const Conv2dParams& p, const Conv2dGeometry& g,
                                                    std::int64_t oy, std::int64_t ox,
                                                    std::int64_t ky, std::int64_t kx) {
    const std::int64_t iy = oy * p.stride[0] - p.padding[0] + ky * p.dilation[0];
    const std::int64_t ix = ox * p.stride[1] - p.padding[1] + kx * p.dilation[1];
    if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w)
        return std::nullopt;
    return std::array<std::int64_t, 2>{iy, ix};
}

bool sameBits(const Tensor& got, const std::vector<float>& want) {
    return got.values<float>().size() == want.size() &&
           std::memcmp(got.values<float>().data(), want.data(), want.size() * sizeof(float)) == 0;
}

// conv2d as docs/ops.md defines it: each output element the sum over (c, kh, kw) in that order
// from 0, in float, taps in the padding skipped.
std::vector<float> sequentialConv2d(const Tensor& x, const Tensor& w, const Shape& output,
                                    const Attributes& attrs) {
    const Conv2dParams p = conv2dParams(attrs).value();
    const auto g = conv2dGeometry(x.shape(), w.shape(), output, p.groups);
    const auto xv = x.values<float>(), wv = w.values<float>();
    std::vector<float> y(static_cast<std::size_t>(g.n * g.o * g.oh * g.ow));
    for (std::int64_t b = 0; b < g.n; ++b)
        for (std::int64_t oc = 0; oc < g.o; ++oc)
            for (std::int64_t oy = 0; oy < g.oh; ++oy)
                for (std::int64_t ox = 0; ox < g.ow; ++ox) {
                    float acc = 0;
                    for (std::int64_t ch = 0; ch < g.ci; ++ch)
                        for (std::int64_t ky = 0; ky < g.kh; ++ky)
                            for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                                const auto in = tapInput(p, g, oy, ox, ky, kx);
                                if (!in)
                                    continue;
                                const auto [iy, ix] = *in;
                                const std::int64_t first = oc / g.outPerGroup() * g.ci;
                                acc =
                                    acc + xv[g.x(b, first + ch, iy, ix)] * wv[g.wt(oc, ch, ky, kx)];
                            }
                    y[static_cast<std::size_t>(g.out(b, oc, oy, ox))] = acc;
                }
    return y;
}

// Both gradients of conv2d(x, w) for grad_out gy, each element the sequential sum from 0 with the
// padding's taps skipped (input_grad over (o, kh, kw), weight_grad over (n, oh, ow)), compared
// bit for bit with the reference's.
bool sameGradients(const Tensor& x, const Tensor& w, const Tensor& gy, const Attributes& attrs) {
    Attributes inputAttrs = attrs, weightAttrs = attrs;
    inputAttrs["input_shape"] = IntList(x.shape());
    weightAttrs["weight_shape"] = IntList(w.shape());
    const Tensor gx =
        runOp(OpCode::Conv2dInputGrad, std::vector<Tensor>{gy, w}, inputAttrs).value();
    const Tensor gw =
        runOp(OpCode::Conv2dWeightGrad, std::vector<Tensor>{x, gy}, weightAttrs).value();
    const Conv2dParams p = conv2dParams(attrs).value();
    const auto g = conv2dGeometry(x.shape(), w.shape(), gy.shape(), p.groups);
    const auto xv = x.values<float>(), wv = w.values<float>(), gyv = gy.values<float>();
    std::vector<float> wantX(xv.size(), 0.0f), wantW(wv.size(), 0.0f);
    // Visited in each element's summation order, so `+=` builds the sequential sums: an input
    // element's products come in (o, kh, kw) order, a weight element's in (n, oh, ow).
    for (std::int64_t b = 0; b < g.n; ++b)
        for (std::int64_t oc = 0; oc < g.o; ++oc)
            for (std::int64_t ky = 0; ky < g.kh; ++ky)
                for (std::int64_t kx = 0; kx < g.kw; ++kx)
                    for (std::int64_t oy = 0; oy < g.oh; ++oy)
                        for (std::int64_t ox = 0; ox < g.ow; ++ox) {
                            const auto in = tapInput(p, g, oy, ox, ky, kx);
                            if (!in)
                                continue;
                            const auto [iy, ix] = *in;
                            const std::int64_t first = oc / g.outPerGroup() * g.ci;
                            const float grad = gyv[g.out(b, oc, oy, ox)];
                            for (std::int64_t ch = 0; ch < g.ci; ++ch) {
                                const auto at =
                                    static_cast<std::size_t>(g.x(b, first + ch, iy, ix));
                                const auto wt = static_cast<std::size_t>(g.wt(oc, ch, ky, kx));
                                wantX[at] = wantX[at] + grad * wv[wt];
                                wantW[wt] = wantW[wt] + grad * xv[at];
                            }
                        }
    return sameBits(gx, wantX) && sameBits(gw, wantW);
}

} // namespace

class TestReferenceWindowOps : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void conv2dByHand() {
        auto x = make<float>(DType::F32, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
        auto w = make<float>(DType::F32, {1, 1, 2, 2}, {1, 1, 1, 1});
        QCOMPARE(run<float>(OpCode::Conv2d, {x, w}, {}), (std::vector<float>{12, 16, 24, 28}));
        // Padding 1, stride 2: the corners see one, two or four elements.
        QCOMPARE(run<float>(OpCode::Conv2d, {x, w},
                            {{"padding", IntList{1, 1}}, {"stride", IntList{2, 2}}}),
                 (std::vector<float>{1, 5, 11, 28}));
    }
    void conv2dWithinMatmulBound() {
        const std::int64_t n = 2, c = 4, h = 7, wd = 6, o = 6, kh = 3, kw = 2;
        const Tensor x = random<float>(DType::F32, {n, c, h, wd}, 1);
        const Tensor w = random<float>(DType::F32, {o, c / 2, kh, kw}, 2);
        const Tensor y = runChecked(OpCode::Conv2d, {x, w}, kConv);
        QCOMPARE(y.shape(),
                 (Shape{2, 6, 4, 8})); // (7 + 2 − 3)/2 + 1 = 4; (6 + 4 − (2·1 + 1))/1 + 1 = 8
        const auto& s = y.shape();
        const Tolerance tolerance = opInfo(OpCode::Conv2d).tolerance;
        for (std::int64_t b = 0; b < n; ++b)
            for (std::int64_t oc = 0; oc < o; ++oc)
                for (std::int64_t oy = 0; oy < s[2]; ++oy)
                    for (std::int64_t ox = 0; ox < s[3]; ++ox) {
                        double exact = 0, scale = 0;
                        for (std::int64_t ch = 0; ch < c / 2; ++ch)
                            for (std::int64_t ky = 0; ky < kh; ++ky)
                                for (std::int64_t kx = 0; kx < kw; ++kx) {
                                    const std::int64_t iy = oy * 2 - 1 + ky, ix = ox - 2 + kx * 2;
                                    if (iy < 0 || iy >= h || ix < 0 || ix >= wd)
                                        continue;
                                    const double a = x.values<float>()[static_cast<std::size_t>(
                                        ((b * c + oc / 3 * 2 + ch) * h + iy) * wd + ix)];
                                    const double v = w.values<float>()[static_cast<std::size_t>(
                                        ((oc * 2 + ch) * kh + ky) * kw + kx)];
                                    exact += a * v;
                                    scale += std::abs(a * v);
                                }
                        const double got = y.values<float>()[static_cast<std::size_t>(
                            ((b * o + oc) * s[2] + oy) * s[3] + ox)];
                        QVERIFY(std::abs(got - exact) <=
                                toleranceBound(tolerance, DType::F32, exact, scale, 12));
                    }
    }
    void conv2dSumsEachElementsTapsInOrder() {
        // The kernel is a blocked product over gathered taps (or, with few output channels, runs
        // tap by tap over whole planes); every element must still be the sequential sum over
        // (c, kh, kw) from 0, padding skipped: the same bits as sequentialConv2d. The last
        // geometry sums 40·9 = 360 taps (past one 256-deep panel) into 13 channels (a partial
        // block of rows) at 99 positions (a partial block of columns).
        unsigned seed = 40;
        for (const ConvCase& conv : convCases()) {
            const Tensor x = random<float>(DType::F32, conv.input, seed++);
            const Tensor w = random<float>(DType::F32, conv.forwardWeight, seed++);
            const Tensor y = runOp(OpCode::Conv2d, std::vector<Tensor>{x, w}, conv.attrs).value();
            QVERIFY(sameBits(y, sequentialConv2d(x, w, y.shape(), conv.attrs)));
        }
    }

    void conv2dGradientsSumEachElementsProductsInOrder() {
        // The gradient kernels are blocked products over gathered taps (or run tap by tap); every
        // element must still be the sequential sum from 0, padding skipped: input_grad over
        // (o, kh, kw), weight_grad over (n, oh, ow). 40 output channels: the input gradient sums
        // 40·9 = 360 products (past one 256-deep panel), the weight gradient's blocks of rows
        // are whole and not.
        unsigned seed = 60;
        for (const ConvCase& conv : convCases()) {
            const Tensor x = random<float>(DType::F32, conv.input, seed++);
            const Tensor w = random<float>(DType::F32, conv.gradientWeight, seed++);
            const Tensor y = runOp(OpCode::Conv2d, std::vector<Tensor>{x, w}, conv.attrs).value();
            const Tensor gy = random<float>(DType::F32, y.shape(), seed++);
            QVERIFY(sameGradients(x, w, gy, conv.attrs));
        }
    }

    void conv2dNonFiniteOperandsKeepTheSequentialBits() {
        // A tap in the padding is skipped, not multiplied by 0: an infinite weight (or grad_out,
        // for the weight gradient) must not turn a padded output into NaN, as w·0 would; an
        // infinite input element spreads exactly as the sequential sums spread it.
        unsigned seed = 80;
        for (const ConvCase& conv : convCases()) {
            Tensor x = random<float>(DType::F32, conv.input, seed++);
            Tensor w = random<float>(DType::F32, conv.gradientWeight, seed++);
            const Tensor y = runOp(OpCode::Conv2d, std::vector<Tensor>{x, w}, conv.attrs).value();
            Tensor gy = random<float>(DType::F32, y.shape(), seed++);
            x.values<float>()[5] = -kInf; // inputs: every kernel's own path
            QVERIFY(sameBits(runOp(OpCode::Conv2d, std::vector<Tensor>{x, w}, conv.attrs).value(),
                             sequentialConv2d(x, w, y.shape(), conv.attrs)));
            QVERIFY(sameGradients(x, w, gy, conv.attrs));
            w.values<float>()[7] = kInf; // the operands a skipped tap would multiply by 0
            gy.values<float>()[3] = -kInf;
            const Tensor infinite =
                runOp(OpCode::Conv2d, std::vector<Tensor>{x, w}, conv.attrs).value();
            QVERIFY(sameBits(infinite, sequentialConv2d(x, w, y.shape(), conv.attrs)));
            QVERIFY(sameGradients(x, w, gy, conv.attrs));
        }
    }

    void conv2dGradientsAreAdjoints() {
        // ⟨conv(x, w), g⟩ = ⟨x, input_grad(g, w)⟩ = ⟨w, weight_grad(x, g)⟩ for every x, w, g.
        const Tensor x = random<double>(DType::F64, {2, 4, 7, 6}, 3);
        const Tensor w = random<double>(DType::F64, {6, 2, 3, 2}, 4);
        const Tensor y = runChecked(OpCode::Conv2d, {x, w}, kConv);
        const Tensor g = random<double>(DType::F64, y.shape(), 5);
        Attributes inputAttrs = kConv;
        inputAttrs["input_shape"] = IntList(x.shape());
        Attributes weightAttrs = kConv;
        weightAttrs["weight_shape"] = IntList(w.shape());
        const Tensor gx = runChecked(OpCode::Conv2dInputGrad, {g, w}, inputAttrs);
        const Tensor gw = runChecked(OpCode::Conv2dWeightGrad, {x, g}, weightAttrs);
        const double reference = dot(y, g);
        QVERIFY(std::abs(dot(x, gx) - reference) <= 1e-11 * std::abs(reference) + 1e-11);
        QVERIFY(std::abs(dot(w, gw) - reference) <= 1e-11 * std::abs(reference) + 1e-11);
        QVERIFY(std::abs(reference) > 1e-3); // not a vacuous identity
    }
    void maxPoolNanInfAndPadding() {
        // One plane 2×4: windows 1×2 → (1, NaN), (NaN, NaN) first NaN wins, then values.
        auto x = make<float>(DType::F32, {1, 2, 4}, {1, kNan, kNan, kNan, -kInf, -kInf, 5, 5});
        const Attributes pairs{{"kernel", IntList{1, 2}}};
        const auto values = run<float>(OpCode::MaxPool2d, {x}, pairs);
        QVERIFY(std::isnan(values[0]) && std::isnan(values[1]));
        QCOMPARE(values[2], -kInf);
        QCOMPARE(values[3], 5.0f);
        QCOMPARE(run<std::int64_t>(OpCode::MaxPool2dIndices, {x}, pairs),
                 (std::vector<std::int64_t>{1, 2, 4, 6}));
        // Padding: windows start in the padding; the first in-bounds element is the −inf argmax.
        auto low = make<float>(DType::F32, {1, 1, 4}, {-kInf, -kInf, -kInf, -kInf});
        const Attributes padded{{"kernel", IntList{1, 2}}, {"padding", IntList{0, 1}}};
        QCOMPARE(run<std::int64_t>(OpCode::MaxPool2dIndices, {low}, padded),
                 (std::vector<std::int64_t>{0, 1, 3}));
        // ceil_mode keeps a last partial window.
        auto row = make<float>(DType::F32, {1, 1, 5}, {1, 3, 2, 5, 4});
        QCOMPARE(run<float>(OpCode::MaxPool2d, {row}, {{"kernel", IntList{1, 2}}}),
                 (std::vector<float>{3, 5}));
        QCOMPARE(
            run<float>(OpCode::MaxPool2d, {row}, {{"kernel", IntList{1, 2}}, {"ceil_mode", true}}),
            (std::vector<float>{3, 5, 4}));
        QCOMPARE(run<float>(OpCode::MaxPool2d, {row},
                            {{"kernel", IntList{1, 2}},
                             {"dilation", IntList{1, 2}},
                             {"stride", IntList{1, 1}}}),
                 (std::vector<float>{2, 5, 4}));
    }
    void maxPoolNanWinsOverAnyValueAfterIt() {
        // Windows 2×3 of one 2×6 plane: a NaN after a larger value, then values after it,
        // two NaNs (the first in row-major order wins), and a tie (the first maximum wins).
        auto x = make<float>(DType::F32, {1, 2, 6},
                             {9, 1, 2, /**/ 3, kNan, 1, //
                              4, kNan, 8, /**/ kNan, 2, 7});
        const Attributes windows{{"kernel", IntList{2, 3}}, {"stride", IntList{2, 3}}};
        QCOMPARE(run<std::int64_t>(OpCode::MaxPool2dIndices, {x}, windows),
                 (std::vector<std::int64_t>{7, 4}));
        auto tie = make<float>(DType::F32, {1, 2, 3}, {1, 6, 2, 6, 0, 6});
        QCOMPARE(run<std::int64_t>(OpCode::MaxPool2dIndices, {tie}, windows),
                 (std::vector<std::int64_t>{1}));
        const auto grad =
            run<float>(OpCode::MaxPool2dBackward,
                       {make<float>(DType::F32, {1, 1, 2}, {0.5f, 0.25f}), x}, windows);
        QCOMPARE(grad, (std::vector<float>{0, 0, 0, 0, 0.25f, 0, 0, 0.5f, 0, 0, 0, 0}));
    }
    void maxPoolBackwardAccumulatesOverlaps() {
        // 1×4, kernel 1×3, stride 1: windows (0..2), (1..3); the max 9 at 1 wins both.
        auto x = make<double>(DType::F64, {1, 1, 1, 4}, {0, 9, 1, 2});
        auto g = make<double>(DType::F64, {1, 1, 1, 2}, {0.5, 0.25});
        const Attributes attrs{{"kernel", IntList{1, 3}}, {"stride", IntList{1, 1}}};
        QCOMPARE(run<double>(OpCode::MaxPool2dBackward, {g, x}, attrs),
                 (std::vector<double>{0, 0.75, 0, 0}));
        auto grid = random<double>(DType::F64, {2, 3, 6, 5}, 9);
        const Attributes pool{
            {"kernel", IntList{3, 2}}, {"stride", IntList{2, 2}}, {"padding", IntList{1, 1}}};
        const Tensor indices = runChecked(OpCode::MaxPool2dIndices, {grid}, pool);
        const Tensor ones =
            make<double>(DType::F64, indices.shape(),
                         std::vector<double>(indices.values<std::int64_t>().size(), 1.0));
        const auto grad = run<double>(OpCode::MaxPool2dBackward, {ones, grid}, pool);
        double total = 0;
        for (double v : grad)
            total += v;
        QCOMPARE(total,
                 static_cast<double>(indices.values<std::int64_t>().size())); // every window once
    }
    void layerNormMatchesFloat64() {
        auto simple = make<double>(DType::F64, {4}, {1, 2, 3, 4});
        auto one = make<double>(DType::F64, {4}, {1, 1, 1, 1});
        auto zero = make<double>(DType::F64, {4}, {0, 0, 0, 0});
        const auto y = run<double>(OpCode::LayerNorm, {simple, one, zero},
                                   {{"normalized_ndim", std::int64_t{1}}, {"eps", 0.0}});
        QVERIFY(std::abs(y[0] + 1.5 / std::sqrt(1.25)) < 1e-15 &&
                std::abs(y[3] - 1.5 / std::sqrt(1.25)) < 1e-15);
        const std::int64_t rows = 6, k = 3 * 5;
        Tensor x = random<float>(DType::F32, {rows, 3, 5}, 11);
        for (float& v : x.values<float>())
            v = v + 100.0f; // a large mean: the two-pass variance must not cancel
        const Tensor w = random<float>(DType::F32, {3, 5}, 12);
        const Tensor b = random<float>(DType::F32, {3, 5}, 13);
        const Attributes attrs{{"normalized_ndim", std::int64_t{2}}};
        const auto got = run<float>(OpCode::LayerNorm, {x, w, b}, attrs);
        const Tolerance tolerance = opInfo(OpCode::LayerNorm).tolerance;
        for (std::int64_t r = 0; r < rows; ++r) {
            const float* row = x.values<float>().data() + r * k;
            double mean = 0, var = 0;
            for (std::int64_t j = 0; j < k; ++j)
                mean += row[j] / static_cast<double>(k);
            for (std::int64_t j = 0; j < k; ++j)
                var += (row[j] - mean) * (row[j] - mean) / static_cast<double>(k);
            const double rstd = 1 / std::sqrt(var + 1e-5);
            for (std::int64_t j = 0; j < k; ++j) {
                const double wj = w.values<float>()[static_cast<std::size_t>(j)];
                const double bj = b.values<float>()[static_cast<std::size_t>(j)];
                const double want = (row[j] - mean) * rstd * wj + bj;
                const double scale =
                    std::abs(wj) * (1 + rstd * (std::abs(row[j]) + std::abs(mean))) + std::abs(bj);
                const double bound = toleranceBound(tolerance, DType::F32, want, scale, k);
                QVERIFY2(std::abs(got[static_cast<std::size_t>(r * k + j)] - want) <= bound,
                         qPrintable(QStringLiteral("row %1 col %2").arg(r).arg(j)));
            }
        }
    }
    void layerNormBackwardMatchesFiniteDifferences() {
        const Tensor x = random<double>(DType::F64, {3, 4}, 21);
        const Tensor w = random<double>(DType::F64, {4}, 22);
        const Tensor b = random<double>(DType::F64, {4}, 23);
        const Tensor g = random<double>(DType::F64, {3, 4}, 24);
        const Attributes attrs{{"normalized_ndim", std::int64_t{1}}, {"eps", 1e-3}};
        auto loss = [&](const Tensor& xs, const Tensor& ws, const Tensor& bs) {
            return dot(runChecked(OpCode::LayerNorm, {xs, ws, bs}, attrs), g);
        };
        // Central differences of the loss ⟨layer_norm(x, w, b), g⟩ along one coordinate of `which`.
        auto numeric = [&](int which, std::size_t i) {
            const double h = 1e-6;
            Tensor plus = Tensor::allocate(DType::F64, (which == 0 ? x : w).shape()).value();
            Tensor minus = Tensor::allocate(DType::F64, plus.shape()).value();
            const Tensor& base = which == 0 ? x : which == 1 ? w : b;
            std::copy(base.values<double>().begin(), base.values<double>().end(),
                      plus.values<double>().begin());
            std::copy(base.values<double>().begin(), base.values<double>().end(),
                      minus.values<double>().begin());
            plus.values<double>()[i] += h;
            minus.values<double>()[i] -= h;
            const double up = which == 0   ? loss(plus, w, b)
                              : which == 1 ? loss(x, plus, b)
                                           : loss(x, w, plus);
            const double down = which == 0   ? loss(minus, w, b)
                                : which == 1 ? loss(x, minus, b)
                                             : loss(x, w, minus);
            return (up - down) / (2 * h);
        };
        const char* outputs[] = {"input", "weight", "bias"};
        for (int which = 0; which < 3; ++which) {
            Attributes backward = attrs;
            backward["output"] = std::string(outputs[which]);
            const auto analytic = run<double>(OpCode::LayerNormBackward, {g, x, w}, backward);
            QCOMPARE(analytic.size(), which == 0 ? std::size_t{12} : std::size_t{4});
            for (std::size_t i = 0; i < analytic.size(); ++i)
                QVERIFY2(std::abs(analytic[i] - numeric(which, i)) <
                             1e-6 * (1 + std::abs(analytic[i])),
                         outputs[which]);
        }
    }
};

QTEST_APPLESS_MAIN(TestReferenceWindowOps)
#include "test_reference_window_ops.moc"
