// Tests of the catalog 3 indexing, layout and random ops of the CPU reference executor (gather,
// index_select, embedding, one_hot, index_add, concat, slice, pad, dropout_mask): hand-computed
// values, PyTorch's clamping and cropping rules, out-of-range indices, Philox known answers.
#include <QtTest/QtTest>

#include <cstdint>
#include <limits>

#include "goblin/reference/graph_executor.hpp"
#include "philox.h"
#include "support/reference_op_helpers.hpp"

using goblin::ErrorCode;
using namespace goblin::core;
using namespace goblin::core::ops;
using goblin::reference::runOp;
using namespace reference_test;

namespace {

Attributes dim(std::int64_t d) {
    return {{"dim", d}};
}

} // namespace

class TestReferenceIndexOps : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void gatherAlongEitherDim() {
        auto x = make<float>(DType::F32, {2, 2}, {1, 2, 3, 4});
        auto index = make<std::int64_t>(DType::I64, {2, 2}, {0, 0, 1, 0});
        QCOMPARE(run<float>(OpCode::Gather, {x, index}, dim(1)), (std::vector<float>{1, 1, 4, 3}));
        auto rows = make<std::int32_t>(DType::I32, {1, 2}, {1, 0});
        QCOMPARE(run<float>(OpCode::Gather, {x, rows}, dim(0)), (std::vector<float>{3, 2}));
        auto tooBig = make<std::int64_t>(DType::I64, {1, 1}, {2});
        auto negative = make<std::int64_t>(DType::I64, {1, 1}, {-1});
        QCOMPARE(failure(OpCode::Gather, {x, tooBig}, dim(0)), ErrorCode::InvalidInput);
        QCOMPARE(failure(OpCode::Gather, {x, negative}, dim(0)), ErrorCode::InvalidInput);
    }
    void indexSelectAndEmbedding() {
        auto x = make<std::int64_t>(DType::I64, {3, 2}, {1, 2, 3, 4, 5, 6});
        auto index = make<std::int32_t>(DType::I32, {3}, {2, 0, 2});
        QCOMPARE(run<std::int64_t>(OpCode::IndexSelect, {x, index}, dim(0)),
                 (std::vector<std::int64_t>{5, 6, 1, 2, 5, 6}));
        auto column = make<std::int64_t>(DType::I64, {1}, {1});
        QCOMPARE(run<std::int64_t>(OpCode::IndexSelect, {x, column}, dim(-1)),
                 (std::vector<std::int64_t>{2, 4, 6}));
        auto outside = make<std::int64_t>(DType::I64, {2}, {0, 3});
        QCOMPARE(failure(OpCode::IndexSelect, {x, outside}, dim(0)), ErrorCode::InvalidInput);
        auto weight = make<double>(DType::F64, {4, 2}, {0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5});
        auto ids = make<std::int64_t>(DType::I64, {2, 2}, {3, 0, 1, 1});
        auto rows = runOp(OpCode::Embedding, std::vector<Tensor>{weight, ids}, {});
        QCOMPARE(rows->shape(), (Shape{2, 2, 2}));
        QCOMPARE(run<double>(OpCode::Embedding, {weight, ids}),
                 (std::vector<double>{3, 3.5, 0, 0.5, 1, 1.5, 1, 1.5}));
        auto badId = make<std::int64_t>(DType::I64, {1}, {4});
        QCOMPARE(failure(OpCode::Embedding, {weight, badId}), ErrorCode::InvalidInput);
    }
    void oneHotRefusesClassesOutOfRange() {
        auto classes = make<std::int64_t>(DType::I64, {3}, {0, 2, 1});
        const Attributes three{{"num_classes", std::int64_t{3}}};
        QCOMPARE(run<std::int64_t>(OpCode::OneHot, {classes}, three),
                 (std::vector<std::int64_t>{1, 0, 0, 0, 0, 1, 0, 1, 0}));
        QCOMPARE(failure(OpCode::OneHot, {make<std::int64_t>(DType::I64, {1}, {3})}, three),
                 ErrorCode::InvalidInput);
        QCOMPARE(failure(OpCode::OneHot, {make<std::int32_t>(DType::I32, {1}, {-1})}, three),
                 ErrorCode::InvalidInput);
    }
    void indexAddAccumulatesInIndexOrder() {
        auto x = make<float>(DType::F32, {2, 3}, {1, 1, 1, 1, 1, 1});
        auto index = make<std::int64_t>(DType::I64, {3}, {0, 2, 0});
        auto source = make<float>(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
        QCOMPARE(run<float>(OpCode::IndexAdd, {x, index, source},
                            {{"dim", std::int64_t{1}}, {"alpha", 2.0}}),
                 (std::vector<float>{9, 1, 5, 21, 1, 11}));
        // Index order is the accumulation order: 1 + 1e8 − 1e8 in f32 loses the 1.
        auto big = make<float>(DType::F32, {1}, {1});
        auto twice = make<std::int64_t>(DType::I64, {2}, {0, 0});
        auto terms = make<float>(DType::F32, {2}, {1e8f, -1e8f});
        QCOMPARE(run<float>(OpCode::IndexAdd, {big, twice, terms}, dim(0)),
                 (std::vector<float>{0}));
        const std::int32_t max = std::numeric_limits<std::int32_t>::max();
        auto ints = make<std::int32_t>(DType::I32, {1}, {max});
        auto one = make<std::int32_t>(DType::I32, {1}, {1});
        auto zero = make<std::int64_t>(DType::I64, {1}, {0});
        QCOMPARE(run<std::int32_t>(OpCode::IndexAdd, {ints, zero, one}, dim(0))[0],
                 std::numeric_limits<std::int32_t>::min());
        auto outside = make<std::int64_t>(DType::I64, {1}, {1});
        QCOMPARE(failure(OpCode::IndexAdd, {ints, outside, one}, dim(0)), ErrorCode::InvalidInput);
    }
    void concatAlongDims() {
        auto a = make<std::int32_t>(DType::I32, {1, 2}, {1, 2});
        auto b = make<std::int32_t>(DType::I32, {2, 2}, {3, 4, 5, 6});
        QCOMPARE(run<std::int32_t>(OpCode::Concat, {a, b}, dim(0)),
                 (std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}));
        auto c = make<std::int32_t>(DType::I32, {2, 1}, {7, 8});
        auto empty = Tensor::allocate(DType::I32, {2, 0}).value();
        QCOMPARE(run<std::int32_t>(OpCode::Concat, {c, empty, b, c}, dim(-1)),
                 (std::vector<std::int32_t>{7, 3, 4, 7, 8, 5, 6, 8}));
    }
    void sliceClampsLikePython() {
        std::vector<std::int64_t> values(10);
        for (std::int64_t i = 0; i < 10; ++i)
            values[static_cast<std::size_t>(i)] = i;
        auto x = make<std::int64_t>(DType::I64, {10}, values);
        auto sliced = [&](std::int64_t start, std::int64_t end, std::int64_t step) {
            return run<std::int64_t>(OpCode::Slice, {x},
                                     {{"start", start}, {"end", end}, {"step", step}});
        };
        QCOMPARE(sliced(-3, std::numeric_limits<std::int64_t>::max(), 1),
                 (std::vector<std::int64_t>{7, 8, 9}));
        QCOMPARE(sliced(1, 8, 3), (std::vector<std::int64_t>{1, 4, 7}));
        QCOMPARE(sliced(std::numeric_limits<std::int64_t>::min(), -8, 1),
                 (std::vector<std::int64_t>{0, 1}));
        QCOMPARE(sliced(7, 3, 1), (std::vector<std::int64_t>{}));
        auto m = make<float>(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
        QCOMPARE(
            run<float>(OpCode::Slice, {m}, {{"dim", std::int64_t{1}}, {"start", std::int64_t{1}}}),
            (std::vector<float>{2, 3, 5, 6}));
    }
    void padFillsAndCrops() {
        auto x = make<float>(DType::F32, {2, 2}, {1, 2, 3, 4});
        // Last dim: 1 before, 0 after; first dim: crop 1 before, 1 after.
        QCOMPARE(run<float>(OpCode::Pad, {x}, {{"pads", IntList{1, 0, -1, 1}}, {"value", 9.0}}),
                 (std::vector<float>{9, 3, 4, 9, 9, 9}));
        auto flags = make<bool>(DType::Bool, {2}, {true, false});
        QCOMPARE(
            run<bool>(OpCode::Pad, {flags}, {{"pads", IntList{0, 1}}, {"value", std::int64_t{1}}}),
            (std::vector<bool>{true, false, true}));
        auto ints = make<std::int64_t>(DType::I64, {3}, {1, 2, 3});
        QCOMPARE(run<std::int64_t>(OpCode::Pad, {ints}, {{"pads", IntList{-3, 1}}}),
                 (std::vector<std::int64_t>{0}));
    }
    void philoxKnownAnswers() {
        // Random123's kat_vectors for philox4x32-10.
        const goblin_philox_block zero{{0, 0, 0, 0}};
        const goblin_philox_block ones{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}};
        const goblin_philox_block pi{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
        const auto a = goblin_philox4x32_10(zero, 0, 0);
        const auto b = goblin_philox4x32_10(ones, 0xffffffffu, 0xffffffffu);
        const auto c = goblin_philox4x32_10(pi, 0xa4093822u, 0x299f31d0u);
        QCOMPARE(std::vector<std::uint32_t>(a.v, a.v + 4),
                 (std::vector<std::uint32_t>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
        QCOMPARE(std::vector<std::uint32_t>(b.v, b.v + 4),
                 (std::vector<std::uint32_t>{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
        QCOMPARE(std::vector<std::uint32_t>(c.v, c.v + 4),
                 (std::vector<std::uint32_t>{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
        // Key (0, 0), counter 0: the first word 0x6627e8d5 / 2³² = 0.39904…
        QCOMPARE(goblin_philox_dropout_word(0, 0, 0), 0x6627e8d5u);
    }
    void dropoutMaskIsPhiloxThresholded() {
        auto mask = [](double p, std::int64_t seed, std::int64_t offset, Shape shape) {
            return run<float>(
                OpCode::DropoutMask, {},
                {{"shape", IntList(shape)}, {"p", p}, {"seed", seed}, {"offset", offset}});
        };
        QCOMPARE(mask(0.39, 0, 0, {1})[0], static_cast<float>(1.0 / (1.0 - 0.39)));
        QCOMPARE(mask(0.40, 0, 0, {1})[0], 0.0f);
        const auto whole = mask(0.3, 1234, 0, {40, 50});
        const auto shifted = mask(0.3, 1234, 7, {10});
        for (std::size_t i = 0; i < shifted.size(); ++i)
            QCOMPARE(shifted[i], whole[i + 7]);
        std::size_t kept = 0;
        for (float value : whole) {
            QVERIFY(value == 0.0f || value == static_cast<float>(1.0 / 0.7));
            kept += value != 0.0f;
        }
        QVERIFY(kept > 1300 && kept < 1500); // 2000 draws at 70 %: 1400 ± 5σ
        QVERIFY(mask(0.3, 1235, 0, {40, 50}) != whole);
        const auto f64 = run<double>(OpCode::DropoutMask, {},
                                     {{"shape", IntList{3}},
                                      {"p", 0.0},
                                      {"seed", std::int64_t{-1}},
                                      {"dtype", std::string("f64")}});
        QCOMPARE(f64, (std::vector<double>{1, 1, 1}));
    }
};

QTEST_APPLESS_MAIN(TestReferenceIndexOps)
#include "test_reference_index_ops.moc"
