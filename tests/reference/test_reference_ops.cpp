// Op-by-op tests of the CPU reference executor: edge values (negative integers in division,
// NaN/Inf, empty and broadcast shapes) and random inputs checked against the op's tolerance class.
#include <QtTest/QtTest>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "goblin/reference/graph_executor.hpp"
#include "support/reference_op_helpers.hpp"

using goblin::ErrorCode;
using namespace goblin::core;
using namespace goblin::core::ops;
using goblin::reference::runOp;
using namespace reference_test;

namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Element i of an f32, i32 or f64 tensor, as a double (exact for the values the tests write).
double elementOf(const Tensor& t, std::int64_t i) {
    const auto at = static_cast<std::size_t>(i);
    if (t.dtype() == DType::F32)
        return t.values<float>()[at];
    if (t.dtype() == DType::I32)
        return t.values<std::int32_t>()[at];
    return t.values<double>()[at];
}

void setElement(Tensor& t, std::int64_t i, double value) {
    const auto at = static_cast<std::size_t>(i);
    if (t.dtype() == DType::F32)
        t.values<float>()[at] = static_cast<float>(value);
    else if (t.dtype() == DType::I32)
        t.values<std::int32_t>()[at] = static_cast<std::int32_t>(value);
    else
        t.values<double>()[at] = value;
}

// C-order strides, in elements.
std::vector<std::int64_t> stridesOfShape(const Shape& shape) {
    std::vector<std::int64_t> strides(shape.size(), 1);
    for (std::size_t d = shape.size(); d-- > 1;)
        strides[d - 1] = strides[d] * shape[d];
    return strides;
}

} // namespace

class TestReferenceOps : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void integerDivisionFollowsPyTorch() {
        const std::int32_t min = std::numeric_limits<std::int32_t>::min();
        auto a = make<std::int32_t>(DType::I32, {6}, {7, -7, 7, -7, min, min});
        auto b = make<std::int32_t>(DType::I32, {6}, {2, 2, -2, -2, -1, 3});
        QCOMPARE(run<std::int32_t>(OpCode::FloorDivide, {a, b}),
                 (std::vector<std::int32_t>{3, -4, -4, 3, min, -715827883}));
        QCOMPARE(run<std::int32_t>(OpCode::Remainder, {a, b}),
                 (std::vector<std::int32_t>{1, 1, -1, -1, 0, 1}));
        auto zero = make<std::int32_t>(DType::I32, {}, {0});
        auto error = runOp(OpCode::Remainder, std::vector<Tensor>{a, zero}, {});
        QVERIFY(!error.has_value());
        QCOMPARE(error.error().code, ErrorCode::InvalidInput);
    }
    void integerOverflowWraps() {
        const std::int64_t max = std::numeric_limits<std::int64_t>::max();
        auto a =
            make<std::int64_t>(DType::I64, {2}, {max, std::numeric_limits<std::int64_t>::min()});
        auto one = make<std::int64_t>(DType::I64, {1}, {1});
        QCOMPARE(run<std::int64_t>(OpCode::Add, {a, one})[0],
                 std::numeric_limits<std::int64_t>::min());
        QCOMPARE(run<std::int64_t>(OpCode::Abs, {a})[1], std::numeric_limits<std::int64_t>::min());
    }
    void floatDivisionEdges() {
        auto a = make<float>(DType::F32, {4}, {7.5f, -7.5f, 1.0f, -1.0f});
        auto b = make<float>(DType::F32, {4}, {-2.0f, 2.0f, 0.0f, 0.0f});
        const auto q = run<float>(OpCode::FloorDivide, {a, b});
        QCOMPARE(q[0], -4.0f);
        QCOMPARE(q[1], -4.0f);
        QCOMPARE(q[2], kInf);
        QCOMPARE(q[3], -kInf);
        const auto r = run<float>(OpCode::Remainder, {a, b});
        QCOMPARE(r[0], -0.5f);
        QCOMPARE(r[1], 0.5f);
        QVERIFY(std::isnan(r[2]));
    }
    void whereSelectsTheBitsOfEitherSideUnderEveryBroadcast() {
        // Condition, a and b each full [3, 5], a row [5], a column [3, 1] or a scalar: the result
        // is, bit for bit, the side the condition names (NaN payloads and −0 included).
        std::mt19937 bits(7);
        const std::vector<Shape> shapes{{3, 5}, {5}, {3, 1}, {}};
        static const auto count = [](const Shape& shape) {
            std::int64_t n = 1;
            for (std::int64_t d : shape)
                n *= d;
            return n;
        };
        const auto at = [](const Shape& shape, std::int64_t r, std::int64_t c) {
            if (shape.empty())
                return std::int64_t{0};
            if (shape.size() == 1)
                return c;
            return shape[1] == 1 ? r : r * 5 + c;
        };
        for (const Shape& cs : shapes)
            for (const Shape& as : shapes)
                for (const Shape& bs : shapes) {
                    const auto wide = [](const Shape& shape) { return count(shape) > 1; };
                    const bool rows = cs.size() == 2 || as.size() == 2 || bs.size() == 2;
                    const bool columns = (wide(cs) && cs != Shape{3, 1}) ||
                                         (wide(as) && as != Shape{3, 1}) ||
                                         (wide(bs) && bs != Shape{3, 1});
                    if (!rows || !columns)
                        continue; // the result is not [3, 5]: other shapes cover those
                    std::vector<std::uint8_t> flags;
                    std::vector<std::uint32_t> aBits, bBits;
                    for (std::int64_t i = 0; i < count(cs); ++i)
                        flags.push_back(bits() & 1u);
                    for (std::int64_t i = 0; i < count(as); ++i)
                        aBits.push_back(bits());
                    for (std::int64_t i = 0; i < count(bs); ++i)
                        bBits.push_back(bits());
                    Tensor cond = Tensor::allocate(DType::Bool, cs).value();
                    for (std::size_t i = 0; i < flags.size(); ++i)
                        cond.values<bool>()[i] = flags[i] != 0;
                    Tensor a = Tensor::allocate(DType::F32, as).value();
                    Tensor b = Tensor::allocate(DType::F32, bs).value();
                    std::memcpy(a.bytes().data(), aBits.data(), aBits.size() * 4);
                    std::memcpy(b.bytes().data(), bBits.data(), bBits.size() * 4);
                    const Tensor out =
                        runOp(OpCode::Where, std::vector<Tensor>{cond, a, b}, {}).value();
                    QCOMPARE(out.shape(), (Shape{3, 5}));
                    for (std::int64_t r = 0; r < 3; ++r)
                        for (std::int64_t c = 0; c < 5; ++c) {
                            std::uint32_t got;
                            std::memcpy(&got, out.bytes().data() + (r * 5 + c) * 4, 4);
                            const bool pick = flags[static_cast<std::size_t>(at(cs, r, c))] != 0;
                            const std::uint32_t want =
                                pick ? aBits[static_cast<std::size_t>(at(as, r, c))]
                                     : bBits[static_cast<std::size_t>(at(bs, r, c))];
                            QCOMPARE(got, want);
                        }
                }
    }
    void nanPropagation() {
        auto a = make<float>(DType::F32, {2, 3}, {1, kNan, 3, -kInf, 2, 0});
        auto zero = make<float>(DType::F32, {}, {0});
        const auto m = run<float>(OpCode::Maximum, {a, zero});
        QVERIFY(std::isnan(m[1]));
        QCOMPARE(m[3], 0.0f);
        const auto amax = run<float>(OpCode::Amax, {a}, {{"dims", IntList{1}}});
        QVERIFY(std::isnan(amax[0]));
        QCOMPARE(amax[1], 2.0f);
        QCOMPARE(run<std::int64_t>(OpCode::Argmax, {a}, {{"dim", std::int64_t{1}}}),
                 (std::vector<std::int64_t>{1, 1}));
        QCOMPARE(run<std::int64_t>(OpCode::Argmin, {a}), (std::vector<std::int64_t>{1}));
        const auto clamped = run<float>(OpCode::Clamp, {a}, {{"min", 0.5}, {"max", 2.5}});
        QVERIFY(std::isnan(clamped[1]));
        QCOMPARE(clamped[3], 0.5f);
        QVERIFY(std::isnan(run<float>(OpCode::Relu, {a})[1]));
    }
    void emptyAndBroadcastShapes() {
        auto empty = Tensor::allocate(DType::F32, {0, 3}).value();
        QCOMPARE(run<float>(OpCode::Sum, {empty}, {{"dims", IntList{0}}}),
                 (std::vector<float>{0, 0, 0}));
        QVERIFY(std::isnan(run<float>(OpCode::Mean, {empty})[0]));
        QCOMPARE(run<float>(OpCode::Prod, {empty}), (std::vector<float>{1}));
        auto row = make<float>(DType::F32, {3}, {1, 2, 3});
        auto addEmpty = runOp(OpCode::Add, std::vector<Tensor>{empty, row}, {});
        QCOMPARE(addEmpty->shape(), (Shape{0, 3}));
        auto column = make<float>(DType::F32, {2, 1}, {10, 20});
        QCOMPARE(run<float>(OpCode::Add, {column, row}),
                 (std::vector<float>{11, 12, 13, 21, 22, 23}));
        // One value per row on either side (a per-row scalar loop): the operands keep their order.
        QCOMPARE(run<float>(OpCode::Sub, {row, column}),
                 (std::vector<float>{-9, -8, -7, -19, -18, -17}));
        QCOMPARE(run<float>(OpCode::Sub, {column, row}), (std::vector<float>{9, 8, 7, 19, 18, 17}));
        QCOMPARE(run<float>(OpCode::Div, {column, row}),
                 (std::vector<float>{10.0f, 5.0f, 10.0f / 3.0f, 20.0f, 10.0f, 20.0f / 3.0f}));
    }
    void varianceCorrection() {
        auto x = make<double>(DType::F64, {4}, {1, 2, 3, 4});
        QCOMPARE(run<double>(OpCode::Var, {x}), (std::vector<double>{5.0 / 3.0}));
        QCOMPARE(run<double>(OpCode::Var, {x}, {{"correction", std::int64_t{0}}}),
                 (std::vector<double>{1.25}));
        auto one = make<double>(DType::F64, {1}, {7});
        QVERIFY(std::isnan(run<double>(OpCode::Var, {one})[0]));
    }
    void softmaxAndGelu() {
        auto x = make<float>(DType::F32, {2, 3}, {1000, 1001, 1002, -kInf, 0, 0});
        const auto y = run<float>(OpCode::Softmax, {x}, {{"dim", std::int64_t{-1}}});
        QVERIFY(std::abs(y[0] + y[1] + y[2] - 1.0f) < 1e-6f);
        QCOMPARE(y[3], 0.0f);
        QCOMPARE(y[4], 0.5f);
        auto g = make<double>(DType::F64, {2}, {1.0, -3.0});
        const auto exact = run<double>(OpCode::Gelu, {g});
        const auto tanhForm =
            run<double>(OpCode::Gelu, {g}, {{"approximate", std::string("tanh")}});
        QVERIFY(std::abs(exact[0] - 0.8413447460685429) < 1e-15);
        QVERIFY(std::abs(tanhForm[0] - 0.8411919906082768) < 1e-15);
    }
    // Softmax along the last dim (adjacent members, lines taken eight at a time) gives the bits of
    // the same lines reduced one at a time along a strided dim: masked lines, a line whose maximum
    // is a zero of either sign, a line with a NaN, and a last group of five lines.
    void softmaxOfAdjacentLinesMatchesStridedLines() {
        constexpr std::int64_t kLines = 13, kLength = 64;
        std::mt19937_64 engine(5);
        std::normal_distribution<float> normal(0.0f, 3.0f);
        std::vector<float> rows(static_cast<std::size_t>(kLines * kLength));
        for (std::int64_t l = 0; l < kLines; ++l)
            for (std::int64_t j = 0; j < kLength; ++j)
                rows[static_cast<std::size_t>(l * kLength + j)] =
                    j > l * 5 ? -kInf : normal(engine);
        for (std::int64_t j = 0; j < kLength; ++j)
            rows[static_cast<std::size_t>(2 * kLength + j)] = j % 3 == 0   ? -0.0f
                                                              : j % 3 == 1 ? 0.0f
                                                                           : -kInf;
        rows[7 * kLength + 3] = kNan;
        std::vector<float> columns(rows.size());
        for (std::int64_t l = 0; l < kLines; ++l)
            for (std::int64_t j = 0; j < kLength; ++j)
                columns[static_cast<std::size_t>(j * kLines + l)] =
                    rows[static_cast<std::size_t>(l * kLength + j)];
        const auto byRows = make<float>(DType::F32, {kLines, kLength}, rows);
        const auto byColumns = make<float>(DType::F32, {kLength, kLines}, columns);
        for (OpCode op : {OpCode::Softmax, OpCode::LogSoftmax}) {
            const auto adjacent = run<float>(op, {byRows}, {{"dim", std::int64_t{1}}});
            const auto strided = run<float>(op, {byColumns}, {{"dim", std::int64_t{0}}});
            int nans = 0;
            for (std::int64_t l = 0; l < kLines; ++l)
                for (std::int64_t j = 0; j < kLength; ++j) {
                    const float a = adjacent[static_cast<std::size_t>(l * kLength + j)];
                    const float b = strided[static_cast<std::size_t>(j * kLines + l)];
                    nans += std::isnan(a) ? 1 : 0;
                    QVERIFY2(std::isnan(a) ? std::isnan(b) : std::memcmp(&a, &b, sizeof a) == 0,
                             qPrintable(QString("line %1, element %2: %3 vs %4")
                                            .arg(l)
                                            .arg(j)
                                            .arg(double(a))
                                            .arg(double(b))));
                }
            QCOMPARE(nans, kLength); // the NaN's line is NaN throughout
        }
    }
    void castSaturates() {
        auto x = make<float>(DType::F32, {5}, {kNan, 1e10f, -1e10f, -2.7f, 2.7f});
        QCOMPARE(run<std::int32_t>(OpCode::Cast, {x}, {{"dtype", std::string("i32")}}),
                 (std::vector<std::int32_t>{0, std::numeric_limits<std::int32_t>::max(),
                                            std::numeric_limits<std::int32_t>::min(), -2, 2}));
        QCOMPARE(run<bool>(OpCode::Cast, {x}, {{"dtype", std::string("bool")}})[0], true);
    }
    void permuteAndExpand() {
        auto x = make<std::int32_t>(DType::I32, {2, 3}, {1, 2, 3, 4, 5, 6});
        QCOMPARE(run<std::int32_t>(OpCode::Permute, {x}, {{"dims", IntList{1, 0}}}),
                 (std::vector<std::int32_t>{1, 4, 2, 5, 3, 6}));
        auto c = make<std::int32_t>(DType::I32, {2, 1}, {7, 8});
        QCOMPARE(run<std::int32_t>(OpCode::Expand, {c}, {{"shape", IntList{2, 2}}}),
                 (std::vector<std::int32_t>{7, 7, 8, 8}));
    }
    // Every order of the dims of shapes whose rows are and are not multiples of 8 (transposes
    // move whole 8 × 8 blocks of 4-byte elements, the edges one by one): each element lands
    // where its index says, for f32, i32 and f64.
    void permuteMovesEveryElementWhereItsIndexSays() {
        const std::vector<Shape> shapes = {{24, 40}, {13, 21}, {8, 8}, {3, 16, 9}, {2, 5, 8, 12}};
        for (DType dtype : {DType::F32, DType::I32, DType::F64})
            for (const Shape& shape : shapes) {
                auto x = Tensor::allocate(dtype, shape).value();
                const std::int64_t count = x.elementCount();
                for (std::int64_t i = 0; i < count; ++i)
                    setElement(x, i, static_cast<double>(i * 7 % 1009) - 300.5);
                IntList dims(shape.size());
                std::iota(dims.begin(), dims.end(), std::int64_t{0});
                do {
                    auto y = runOp(OpCode::Permute, std::vector<Tensor>{x}, {{"dims", dims}});
                    QVERIFY(y.has_value());
                    const auto strides = stridesOfShape(shape);
                    for (std::int64_t out = 0; out < count; ++out) {
                        // out's index in y's shape, then the element of x it names.
                        std::int64_t rest = out, from = 0;
                        for (std::size_t d = dims.size(); d-- > 0;) {
                            const auto dim = static_cast<std::size_t>(dims[d]);
                            from += rest % shape[dim] * strides[dim];
                            rest /= shape[dim];
                        }
                        if (elementOf(*y, out) != elementOf(x, from))
                            QFAIL(qPrintable(QString("permute of %1 dims: element %2 wrong")
                                                 .arg(shape.size())
                                                 .arg(out)));
                    }
                } while (std::next_permutation(dims.begin(), dims.end()));
            }
    }
    void randomMatmulWithinBound() {
        std::mt19937 rng(5);
        std::normal_distribution<float> normal;
        const std::int64_t b = 3, m = 4, k = 50, n = 5;
        auto a = Tensor::allocate(DType::F32, {b, m, k}).value();
        auto w = Tensor::allocate(DType::F32, {k, n}).value();
        for (float& v : a.values<float>())
            v = normal(rng);
        for (float& v : w.values<float>())
            v = normal(rng);
        const auto c = run<float>(OpCode::Matmul, {a, w});
        QCOMPARE(c.size(), static_cast<std::size_t>(b * m * n));
        const Tolerance tolerance = opInfo(OpCode::Matmul).tolerance;
        for (std::int64_t p = 0; p < b; ++p)
            for (std::int64_t i = 0; i < m; ++i)
                for (std::int64_t j = 0; j < n; ++j) {
                    double exact = 0, scale = 0;
                    for (std::int64_t l = 0; l < k; ++l) {
                        const double x =
                            a.values<float>()[static_cast<std::size_t>((p * m + i) * k + l)];
                        const double y = w.values<float>()[static_cast<std::size_t>(l * n + j)];
                        exact += x * y;
                        scale += std::abs(x * y);
                    }
                    const double got = c[static_cast<std::size_t>((p * m + i) * n + j)];
                    QVERIFY(std::abs(got - exact) <=
                            toleranceBound(tolerance, DType::F32, exact, scale, k));
                }
    }
    void matmulSumsEachElementInOrder() {
        // The kernel computes blocks of rows and columns at a time, k in panels 256 deep; every
        // element must still be the sequential sum over l from 0 in the dtype, whole blocks and
        // the edges past them alike, across panels, and 0 when k is 0: the same bits as this loop.
        const std::vector<std::array<std::int64_t, 4>> shapes{
            {1, 7, 33, 45},  {1, 9, 70, 16},  {1, 4, 5, 64},   {1, 1, 1, 1},
            {3, 13, 17, 40}, {1, 6, 300, 21}, {2, 5, 513, 18}, {1, 3, 0, 5}};
        unsigned seed = 90;
        for (const auto& [batch, m, k, n] : shapes) {
            const Tensor a = random<float>(DType::F32, {batch, m, k}, seed++);
            const Tensor b = random<float>(DType::F32, {k, n}, seed++);
            const auto c = run<float>(OpCode::Matmul, {a, b});
            const Tensor a64 = random<double>(DType::F64, {batch, m, k}, seed++);
            const Tensor b64 = random<double>(DType::F64, {k, n}, seed++);
            const auto c64 = run<double>(OpCode::Matmul, {a64, b64});
            for (std::int64_t p = 0; p < batch; ++p)
                for (std::int64_t i = 0; i < m; ++i)
                    for (std::int64_t j = 0; j < n; ++j) {
                        float sum = 0;
                        double sum64 = 0;
                        for (std::int64_t l = 0; l < k; ++l) {
                            const auto at = static_cast<std::size_t>((p * m + i) * k + l);
                            const auto bt = static_cast<std::size_t>(l * n + j);
                            sum = sum + a.values<float>()[at] * b.values<float>()[bt];
                            sum64 = sum64 + a64.values<double>()[at] * b64.values<double>()[bt];
                        }
                        const auto ct = static_cast<std::size_t>((p * m + i) * n + j);
                        QVERIFY2(std::memcmp(&c[ct], &sum, sizeof sum) == 0,
                                 (std::to_string(m) + "x" + std::to_string(n) + " at " +
                                  std::to_string(ct))
                                     .c_str());
                        QVERIFY(std::memcmp(&c64[ct], &sum64, sizeof sum64) == 0);
                    }
        }
    }
    void reductionsCombineEachOutputsElementsInOrder() {
        // The kernel advances many outputs at once (across a row when the kept dims are last,
        // eight chains otherwise); every output must still combine its elements in C order from
        // the start, in the dtype: the bits of this loop, with NaN and Inf among the values.
        // Magnitudes from 1e-3 to 1e7 make any other order show in the low bits.
        const Shape shape{5, 9, 13};
        std::mt19937 rng(31);
        std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
        std::uniform_int_distribution<int> exponent(-3, 7);
        Tensor x = Tensor::allocate(DType::F32, shape).value();
        for (float& v : x.values<float>())
            v = mantissa(rng) * std::pow(10.0f, static_cast<float>(exponent(rng)));
        Tensor special = x;
        special.values<float>()[17] = kNan;
        special.values<float>()[200] = kInf;
        special.values<float>()[201] = -kInf;
        const std::vector<IntList> dimsList{{0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}};
        const auto strides = [&](std::size_t d) {
            std::int64_t stride = 1;
            for (std::size_t e = d + 1; e < shape.size(); ++e)
                stride *= shape[e];
            return stride;
        };
        // The offsets of every index over `axes`, in C order.
        const auto offsets = [&](const std::vector<std::size_t>& axes) {
            std::vector<std::int64_t> result{0};
            for (std::size_t axis : axes) {
                std::vector<std::int64_t> next;
                for (std::int64_t base : result)
                    for (std::int64_t i = 0; i < shape[axis]; ++i)
                        next.push_back(base + i * strides(axis));
                result = next;
            }
            return result;
        };
        for (const Tensor* input : {&x, &special})
            for (const IntList& dims : dimsList)
                for (OpCode op :
                     {OpCode::Sum, OpCode::Mean, OpCode::Prod, OpCode::Amax, OpCode::Amin}) {
                    std::vector<std::size_t> kept, reduced;
                    for (std::size_t d = 0; d < shape.size(); ++d)
                        (std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(d)) !=
                                 dims.end()
                             ? reduced
                             : kept)
                            .push_back(d);
                    const auto got = run<float>(op, {*input}, {{"dims", dims}});
                    const auto bases = offsets(kept), members = offsets(reduced);
                    QCOMPARE(got.size(), bases.size());
                    for (std::size_t o = 0; o < bases.size(); ++o) {
                        const auto at = [&](std::int64_t member) {
                            return input
                                ->values<float>()[static_cast<std::size_t>(bases[o] + member)];
                        };
                        float want = op == OpCode::Prod ? 1.0f : 0.0f;
                        if (op == OpCode::Amax || op == OpCode::Amin)
                            want = at(members[0]);
                        for (std::int64_t member : members) {
                            const float v = at(member);
                            if (op == OpCode::Amax || op == OpCode::Amin)
                                want = std::isnan(want) || std::isnan(v) ? kNan
                                       : op == OpCode::Amax              ? std::max(want, v)
                                                                         : std::min(want, v);
                            else
                                want = op == OpCode::Prod ? want * v : want + v;
                        }
                        if (op == OpCode::Mean)
                            want = want / static_cast<float>(members.size());
                        const bool same = std::isnan(want)
                                              ? std::isnan(got[o])
                                              : std::memcmp(&got[o], &want, sizeof want) == 0;
                        QVERIFY2(same,
                                 (std::string(opInfo(op).name) + " over " +
                                  std::to_string(dims.size()) + " dims at " + std::to_string(o))
                                     .c_str());
                    }
                }
    }
    void randomUnaryWithinUlpBudget() {
        std::mt19937 rng(7);
        std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
        auto x = Tensor::allocate(DType::F32, {256}).value();
        for (float& v : x.values<float>())
            v = uniform(rng);
        for (OpCode op : {OpCode::Exp, OpCode::Tanh, OpCode::Sigmoid, OpCode::Erf, OpCode::Gelu}) {
            const auto y = run<float>(op, {x});
            for (std::size_t i = 0; i < y.size(); ++i) {
                const double v = x.values<float>()[i];
                const double want = op == OpCode::Exp       ? std::exp(v)
                                    : op == OpCode::Tanh    ? std::tanh(v)
                                    : op == OpCode::Sigmoid ? 1 / (1 + std::exp(-v))
                                    : op == OpCode::Erf
                                        ? std::erf(v)
                                        : 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
                const double bound = toleranceBound(opInfo(op).tolerance, DType::F32, want, v, 1);
                QVERIFY2(std::abs(y[i] - want) <= bound, opInfo(op).name.data());
            }
        }
    }
};

QTEST_APPLESS_MAIN(TestReferenceOps)
#include "test_reference_ops.moc"
