// The BLAS convolution and its gradients (im2col + OpenBLAS) against independent definitions: the
// forward against the convolution's sum written out in float64, the gradients by the adjoint
// identities ⟨conv(x, w), g⟩ = ⟨x, input_grad(g, w)⟩ = ⟨w, weight_grad(x, g)⟩, over strides,
// padding, dilation, groups and images whose im2col is built in slabs; float32 within its rounding
// of the float64 values.
#include <QtTest/QtTest>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "goblin/compute/blas_conv.hpp"
#include "goblin/core/ops/attributes.hpp"

using goblin::compute::blasConvolution;
using goblin::core::DType;
using goblin::core::Shape;
using goblin::core::Tensor;
namespace ops = goblin::core::ops;

namespace {

struct Case {
    Shape input, weight;
    std::int64_t stride[2], padding[2], dilation[2], groups;
};

ops::Attributes attrsOf(const Case& c) {
    return {{"stride", ops::IntList{c.stride[0], c.stride[1]}},
            {"padding", ops::IntList{c.padding[0], c.padding[1]}},
            {"dilation", ops::IntList{c.dilation[0], c.dilation[1]}},
            {"groups", c.groups}};
}

Tensor filled(DType dtype, const Shape& shape, std::uint64_t seed) {
    Tensor t = Tensor::allocate(dtype, shape).value();
    std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
    const auto next = [&state] {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<double>(state >> 11) / 9007199254740992.0 - 0.5;
    };
    if (dtype == DType::F64)
        for (double& v : t.values<double>())
            v = next();
    else
        for (float& v : t.values<float>())
            v = static_cast<float>(next());
    return t;
}

Tensor asF32(const Tensor& t) {
    Tensor out = Tensor::allocate(DType::F32, t.shape()).value();
    for (std::size_t i = 0; i < out.values<float>().size(); ++i)
        out.values<float>()[i] = static_cast<float>(t.values<double>()[i]);
    return out;
}

double dot(const Tensor& a, const Tensor& b) {
    double sum = 0;
    for (std::size_t i = 0; i < a.values<double>().size(); ++i)
        sum += a.values<double>()[i] * b.values<double>()[i];
    return sum;
}

// y[b, o, oy, ox] = Σ_{c, ky, kx} x[b, group(o)·ci + c, iy, ix] · w[o, c, ky, kx], written out.
std::vector<double> directConvolution(const Tensor& x, const Tensor& w, const Shape& out,
                                      const Case& c) {
    const Shape &xs = x.shape(), &ws = w.shape();
    const std::int64_t ci = ws[1], og = ws[0] / c.groups;
    std::vector<double> y;
    for (std::int64_t b = 0; b < out[0]; ++b)
        for (std::int64_t o = 0; o < out[1]; ++o)
            for (std::int64_t oy = 0; oy < out[2]; ++oy)
                for (std::int64_t ox = 0; ox < out[3]; ++ox) {
                    double sum = 0;
                    for (std::int64_t ch = 0; ch < ci; ++ch)
                        for (std::int64_t ky = 0; ky < ws[2]; ++ky)
                            for (std::int64_t kx = 0; kx < ws[3]; ++kx) {
                                const std::int64_t iy =
                                    oy * c.stride[0] - c.padding[0] + ky * c.dilation[0];
                                const std::int64_t ix =
                                    ox * c.stride[1] - c.padding[1] + kx * c.dilation[1];
                                if (iy < 0 || iy >= xs[2] || ix < 0 || ix >= xs[3])
                                    continue;
                                const std::int64_t channel = o / og * ci + ch;
                                sum += x.values<double>()[static_cast<std::size_t>(
                                           ((b * xs[1] + channel) * xs[2] + iy) * xs[3] + ix)] *
                                       w.values<double>()[static_cast<std::size_t>(
                                           ((o * ci + ch) * ws[2] + ky) * ws[3] + kx)];
                            }
                    y.push_back(sum);
                }
    return y;
}

const std::vector<Case> kCases{
    {{2, 3, 9, 9}, {8, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
    {{2, 8, 10, 11}, {16, 4, 3, 3}, {2, 1}, {1, 0}, {1, 1}, 2},
    {{1, 6, 12, 12}, {6, 2, 3, 2}, {1, 2}, {2, 1}, {2, 1}, 3},
    {{3, 4, 7, 5}, {5, 4, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},
    {{2, 4, 6, 6}, {4, 1, 5, 5}, {3, 3}, {2, 2}, {1, 1}, 4},
    // K·OH·OW = 288·2304 im2col entries: built in slabs of output positions (the last partial,
    // each starting mid-row).
    {{1, 32, 48, 48}, {8, 32, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
};

} // namespace

class TestBlasConv : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void forwardMatchesTheWrittenOutSum() {
        for (std::size_t i = 0; i < kCases.size(); ++i) {
            const Case& c = kCases[i];
            const Tensor x = filled(DType::F64, c.input, 3 * i + 1);
            const Tensor w = filled(DType::F64, c.weight, 3 * i + 2);
            const Tensor y = blasConvolution(ops::OpCode::Conv2d, x, w, attrsOf(c)).value();
            const std::vector<double> want = directConvolution(x, w, y.shape(), c);
            QCOMPARE(y.values<double>().size(), want.size());
            for (std::size_t e = 0; e < want.size(); ++e)
                QVERIFY2(std::abs(y.values<double>()[e] - want[e]) <= 1e-12,
                         ("case " + std::to_string(i) + " element " + std::to_string(e)).c_str());
        }
    }

    void gradientsAreTheForwardsAdjoints() {
        for (std::size_t i = 0; i < kCases.size(); ++i) {
            const Case& c = kCases[i];
            ops::Attributes attrs = attrsOf(c);
            const Tensor x = filled(DType::F64, c.input, 3 * i + 1);
            const Tensor w = filled(DType::F64, c.weight, 3 * i + 2);
            const Tensor y = blasConvolution(ops::OpCode::Conv2d, x, w, attrs).value();
            const Tensor g = filled(DType::F64, y.shape(), 3 * i + 3);
            ops::Attributes inputGrad = attrs, weightGrad = attrs;
            inputGrad["input_shape"] = ops::IntList(c.input.begin(), c.input.end());
            weightGrad["weight_shape"] = ops::IntList(c.weight.begin(), c.weight.end());
            const Tensor gx =
                blasConvolution(ops::OpCode::Conv2dInputGrad, g, w, inputGrad).value();
            const Tensor gw =
                blasConvolution(ops::OpCode::Conv2dWeightGrad, x, g, weightGrad).value();
            QCOMPARE(gx.shape(), c.input);
            QCOMPARE(gw.shape(), c.weight);
            const double forward = dot(y, g);
            const std::string where = "case " + std::to_string(i);
            QVERIFY2(std::abs(dot(x, gx) - forward) <= 1e-11 * (1 + std::abs(forward)),
                     where.c_str());
            QVERIFY2(std::abs(dot(w, gw) - forward) <= 1e-11 * (1 + std::abs(forward)),
                     where.c_str());
            // float32: within its rounding of the float64 values (sums of at most a few hundred
            // products of magnitude ≤ 0.25).
            const Tensor gw32 =
                blasConvolution(ops::OpCode::Conv2dWeightGrad, asF32(x), asF32(g), weightGrad)
                    .value();
            const Tensor gx32 =
                blasConvolution(ops::OpCode::Conv2dInputGrad, asF32(g), asF32(w), inputGrad)
                    .value();
            for (std::size_t e = 0; e < gw.values<double>().size(); ++e)
                QVERIFY(std::abs(gw32.values<float>()[e] - gw.values<double>()[e]) < 1e-4);
            for (std::size_t e = 0; e < gx.values<double>().size(); ++e)
                QVERIFY(std::abs(gx32.values<float>()[e] - gx.values<double>()[e]) < 1e-4);
        }
    }

    void otherOpsAndIntegersAreRefused() {
        const Case& c = kCases[0];
        const Tensor x = filled(DType::F64, c.input, 1);
        const Tensor w = filled(DType::F64, c.weight, 2);
        QCOMPARE(blasConvolution(ops::OpCode::Matmul, x, w, attrsOf(c)).error().code,
                 goblin::ErrorCode::InvalidInput);
        const Tensor xi = Tensor::allocate(DType::I32, c.input).value();
        const Tensor wi = Tensor::allocate(DType::I32, c.weight).value();
        QVERIFY(!blasConvolution(ops::OpCode::Conv2d, xi, wi, attrsOf(c)).has_value());
    }
};

QTEST_GUILESS_MAIN(TestBlasConv)
#include "test_blas_conv.moc"
