// The convolution check (checkClaimedConv) on f32 values, whose row sums it computes straight from
// the convolution's operands where the width's stride is 1 (and gathers otherwise): over strides,
// dilations, paddings wider than the kernel needs, 1×1 kernels and groups (depthwise included),
// every honest conv2d, input gradient and weight gradient from the reference is accepted, and one
// element moved by three times its own bound γ_K·(op(|a|, |b|))_e is caught, whatever the seed.
#include <QtTest/QtTest>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "goblin/core/random_source.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "goblin/verify/conv_check.hpp"
#include "support/random_tensors.hpp"
#include "support/tensor_magnitudes.hpp"

using goblin::core::DType;
using goblin::core::Shape;
using goblin::core::Tensor;
namespace graph = goblin::core::graph;
namespace ops = goblin::core::ops;
namespace verify = goblin::verify;
using goblin::testing::absF64;

namespace {

Tensor randomF32(Shape shape, std::uint64_t seed) {
    return goblin::testing::randomTensor(DType::F32, std::move(shape), seed, {0.0, 1.0});
}

Tensor run(ops::OpCode op, const Tensor& a, const Tensor& b, const ops::Attributes& attrs) {
    return goblin::reference::runOp(op, std::vector<Tensor>{a, b}, attrs).value();
}

// One convolution: x and w's shapes and its attributes.
struct Geometry {
    std::string name;
    Shape x, w;
    ops::Attributes attrs;
};

std::vector<Geometry> geometries() {
    return {
        {"strided, dilated, grouped",
         {2, 8, 9, 10},
         {6, 4, 3, 2},
         {{"stride", ops::IntList{2, 3}},
          {"padding", ops::IntList{1, 1}},
          {"dilation", ops::IntList{2, 1}},
          {"groups", std::int64_t{2}}}},
        {"row stride, dilated, grouped",
         {2, 8, 9, 10},
         {6, 4, 3, 2},
         {{"stride", ops::IntList{2, 1}},
          {"padding", ops::IntList{1, 1}},
          {"dilation", ops::IntList{2, 2}},
          {"groups", std::int64_t{2}}}},
        {"1x1, stride 2", {1, 3, 7, 7}, {4, 3, 1, 1}, {{"stride", ops::IntList{2, 2}}}},
        {"wide rows", {1, 2, 5, 21}, {3, 2, 2, 5}, {{"padding", ops::IntList{0, 3}}}},
        {"wide padding",
         {2, 5, 8, 6},
         {8, 5, 3, 3},
         {{"padding", ops::IntList{2, 0}}, {"dilation", ops::IntList{1, 2}}}},
        {"depthwise",
         {1, 4, 5, 5},
         {4, 1, 3, 3},
         {{"padding", ops::IntList{1, 1}}, {"groups", std::int64_t{4}}}},
    };
}

// One check: the op, its two operands, its attributes, its honest value and its reduction size.
struct Case {
    std::string name;
    ops::OpCode op;
    Tensor a, b;
    ops::Attributes attrs;
    Tensor honest;
    std::int64_t k;
};

std::vector<Case> casesOf(const Geometry& g, std::uint64_t seed) {
    const Tensor x = randomF32(g.x, seed), w = randomF32(g.w, seed + 1);
    const Tensor y = run(ops::OpCode::Conv2d, x, w, g.attrs);
    const Tensor dy = randomF32(y.shape(), seed + 2);
    ops::Attributes inputGrad = g.attrs, weightGrad = g.attrs;
    inputGrad["input_shape"] = ops::IntList(g.x.begin(), g.x.end());
    weightGrad["weight_shape"] = ops::IntList(g.w.begin(), g.w.end());
    const std::int64_t taps = g.w[2] * g.w[3], groups = g.x[1] / g.w[1];
    return {{g.name + " conv2d", ops::OpCode::Conv2d, x, w, g.attrs, y, g.w[1] * taps},
            {g.name + " input grad", ops::OpCode::Conv2dInputGrad, dy, w, inputGrad,
             run(ops::OpCode::Conv2dInputGrad, dy, w, inputGrad), g.w[0] / groups * taps},
            {g.name + " weight grad", ops::OpCode::Conv2dWeightGrad, x, dy, weightGrad,
             run(ops::OpCode::Conv2dWeightGrad, x, dy, weightGrad),
             y.shape()[0] * y.shape()[2] * y.shape()[3]}};
}

verify::ConvCheckReport check(const Case& c, const Tensor& claim, std::uint64_t seed) {
    const graph::GraphNode node{2, c.op, {0, 1}, c.attrs};
    goblin::core::SeededRandom random(seed);
    return verify::checkClaimedConv(node, std::vector<Tensor>{c.a, c.b}, claim, {}, random);
}

} // namespace

class TestConvCheck : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void honestF32ConvolutionsAreAccepted();
    void anElementThreeTimesItsBoundIsCaught();
};

void TestConvCheck::honestF32ConvolutionsAreAccepted() {
    for (const Geometry& g : geometries())
        for (const Case& c : casesOf(g, 40))
            for (std::uint64_t seed = 1; seed <= 6; ++seed) {
                const verify::ConvCheckReport report = check(c, c.honest, seed);
                QVERIFY2(report.verdict == verify::Verdict::Accepted,
                         (c.name + ": " + report.reason).c_str());
                // Far below the accepting threshold: the row sums carry the very same taps.
                QVERIFY2(report.maxErrorRatio < 0.5, c.name.c_str());
            }
}

void TestConvCheck::anElementThreeTimesItsBoundIsCaught() {
    for (const Geometry& g : geometries())
        for (const Case& c : casesOf(g, 50)) {
            const Tensor magnitude =
                goblin::reference::runOp(c.op, std::vector<Tensor>{absF64(c.a), absF64(c.b)},
                                         c.attrs)
                    .value();
            const double ku = static_cast<double>(c.k) * std::ldexp(1.0, -24);
            const std::size_t count = c.honest.values<float>().size();
            for (std::size_t start : {std::size_t{0}, count / 2 + 1, count - 1})
                for (double sign : {1.0, -1.0}) {
                    // The first element from `start` (cyclically) that reads any value at all
                    // (an output that only padding feeds is exactly 0 and is checked as such).
                    std::size_t element = start;
                    while (magnitude.values<double>()[element] == 0.0)
                        element = (element + 1) % count;
                    const double bound = ku / (1.0 - ku) * magnitude.values<double>()[element];
                    Tensor claim = Tensor::allocate(DType::F32, c.honest.shape()).value();
                    std::copy(c.honest.bytes().begin(), c.honest.bytes().end(),
                              claim.bytes().begin());
                    float& value = claim.values<float>()[element];
                    value = static_cast<float>(value + sign * 3.0 * bound);
                    for (std::uint64_t seed = 1; seed <= 6; ++seed)
                        QVERIFY2(check(c, claim, seed).verdict != verify::Verdict::Accepted,
                                 (c.name + " element " + std::to_string(element)).c_str());
                }
        }
}

QTEST_APPLESS_MAIN(TestConvCheck)
#include "test_conv_check.moc"
