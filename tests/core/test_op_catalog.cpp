// Tests of the op catalog: names, broadcasting, dtype and shape inference, attribute validation.
#include <QtTest/QtTest>

#include <limits>

#include "goblin/core/ops/op_catalog.hpp"

using goblin::ErrorCode;
using goblin::Expected;
using goblin::core::DType;
using goblin::core::Shape;
using namespace goblin::core::ops;

namespace {

Expected<TensorSpec> infer(OpCode op, std::vector<TensorSpec> inputs, Attributes attrs = {}) {
    return inferOutput(op, inputs, attrs);
}

ErrorCode codeOf(const Expected<TensorSpec>& result) {
    return result ? ErrorCode::Internal : result.error().code;
}

} // namespace

class TestOpCatalog : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void namesRoundTrip() {
        for (int i = 0; i < kOpCount; ++i) {
            const auto code = static_cast<OpCode>(i);
            QCOMPARE(opFromName(opInfo(code).name), std::optional<OpCode>(code));
        }
        QVERIFY(!opFromName("conv9d"));
    }
    void broadcasting() {
        QCOMPARE(broadcastShapes({2, 1, 4}, {3, 1}).value(), (Shape{2, 3, 4}));
        QCOMPARE(broadcastShapes({}, {5}).value(), (Shape{5}));
        QCOMPARE(broadcastShapes({0, 1}, {1, 3}).value(), (Shape{0, 3}));
        QCOMPARE(broadcastShapes({2, 3}, {4, 3}).error().code, ErrorCode::ShapeMismatch);
    }
    void elementwiseInference() {
        auto add = infer(OpCode::Add, {{DType::F32, {2, 1}}, {DType::F32, {3}}});
        QCOMPARE(add.value(), (TensorSpec{DType::F32, {2, 3}}));
        QCOMPARE(infer(OpCode::Lt, {{DType::I32, {4}}, {DType::I32, {}}}).value().dtype,
                 DType::Bool);
        auto where =
            infer(OpCode::Where, {{DType::Bool, {2, 1}}, {DType::F64, {3}}, {DType::F64, {}}});
        QCOMPARE(where.value(), (TensorSpec{DType::F64, {2, 3}}));
        QCOMPARE(codeOf(infer(OpCode::Add, {{DType::F32, {2}}, {DType::F64, {2}}})),
                 ErrorCode::UnsupportedDtype);
        QCOMPARE(codeOf(infer(OpCode::Div, {{DType::I32, {2}}, {DType::I32, {2}}})),
                 ErrorCode::UnsupportedDtype);
        QCOMPARE(codeOf(infer(OpCode::Exp, {{DType::I64, {2}}})), ErrorCode::UnsupportedDtype);
        QCOMPARE(codeOf(infer(OpCode::BitwiseAnd, {{DType::F32, {2}}, {DType::F32, {2}}})),
                 ErrorCode::UnsupportedDtype);
        QCOMPARE(
            codeOf(infer(OpCode::Where, {{DType::I32, {2}}, {DType::F32, {2}}, {DType::F32, {2}}})),
            ErrorCode::UnsupportedDtype);
        QCOMPARE(codeOf(infer(OpCode::Mul, {{DType::F32, {2, 3}}, {DType::F32, {3, 2}}})),
                 ErrorCode::ShapeMismatch);
        QCOMPARE(codeOf(infer(OpCode::Add, {{DType::F32, {2}}})), ErrorCode::InvalidInput);
    }
    void attributeValidation() {
        QCOMPARE(codeOf(infer(OpCode::Clamp, {{DType::F32, {2}}})), ErrorCode::InvalidInput);
        QVERIFY(infer(OpCode::Clamp, {{DType::I32, {2}}}, {{"min", std::int64_t{-3}}}).has_value());
        QCOMPARE(codeOf(infer(OpCode::Clamp, {{DType::I32, {2}}}, {{"min", 0.5}})),
                 ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::Gelu, {{DType::F32, {2}}},
                              {{"approximate", std::string("fast")}})),
                 ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::Exp, {{DType::F32, {2}}}, {{"typo", true}})),
                 ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::Sum, {{DType::F32, {2}}}, {{"keepdim", std::int64_t{1}}})),
                 ErrorCode::InvalidInput);
    }
    void reductionInference() {
        const TensorSpec x{DType::F32, {2, 3, 4}};
        QCOMPARE(infer(OpCode::Sum, {x}).value().shape, Shape{});
        QCOMPARE(infer(OpCode::Sum, {x}, {{"dims", IntList{0, -1}}}).value().shape, (Shape{3}));
        QCOMPARE(infer(OpCode::Mean, {x}, {{"dims", IntList{1}}, {"keepdim", true}}).value().shape,
                 (Shape{2, 1, 4}));
        QCOMPARE(infer(OpCode::Sum, {{DType::I32, {3}}}).value().dtype, DType::I64);
        QCOMPARE(infer(OpCode::Argmax, {x}, {{"dim", std::int64_t{1}}}).value(),
                 (TensorSpec{DType::I64, {2, 4}}));
        QCOMPARE(codeOf(infer(OpCode::Sum, {x}, {{"dims", IntList{0, 0}}})),
                 ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::Sum, {x}, {{"dims", IntList{3}}})), ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::Mean, {{DType::I32, {3}}})), ErrorCode::UnsupportedDtype);
        QCOMPARE(codeOf(infer(OpCode::Amax, {{DType::F32, {0, 3}}}, {{"dims", IntList{0}}})),
                 ErrorCode::ShapeMismatch);
        QVERIFY(infer(OpCode::Amax, {{DType::F32, {0, 3}}}, {{"dims", IntList{1}}}).has_value());
        QCOMPARE(codeOf(infer(OpCode::Var, {x}, {{"correction", std::int64_t{-1}}})),
                 ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::Softmax, {x})), ErrorCode::InvalidInput);
    }
    void shapeOps() {
        const TensorSpec x{DType::F32, {2, 3, 4}};
        QCOMPARE(infer(OpCode::Reshape, {x}, {{"shape", IntList{4, -1}}}).value().shape,
                 (Shape{4, 6}));
        QCOMPARE(codeOf(infer(OpCode::Reshape, {x}, {{"shape", IntList{5, -1}}})),
                 ErrorCode::ShapeMismatch);
        QCOMPARE(codeOf(infer(OpCode::Reshape, {x}, {{"shape", IntList{-1, -1}}})),
                 ErrorCode::ShapeMismatch);
        QCOMPARE(infer(OpCode::Permute, {x}, {{"dims", IntList{2, 0, 1}}}).value().shape,
                 (Shape{4, 2, 3}));
        QCOMPARE(codeOf(infer(OpCode::Permute, {x}, {{"dims", IntList{0, 0, 1}}})),
                 ErrorCode::InvalidInput);
        QCOMPARE(infer(OpCode::Expand, {{DType::F32, {3, 1}}}, {{"shape", IntList{2, -1, 5}}})
                     .value()
                     .shape,
                 (Shape{2, 3, 5}));
        QCOMPARE(codeOf(infer(OpCode::Expand, {{DType::F32, {3}}}, {{"shape", IntList{4}}})),
                 ErrorCode::ShapeMismatch);
        QCOMPARE(infer(OpCode::Cast, {x}, {{"dtype", std::string("i64")}}).value().dtype,
                 DType::I64);
        QCOMPARE(codeOf(infer(OpCode::Cast, {x}, {{"dtype", std::string("f16")}})),
                 ErrorCode::UnsupportedDtype);
    }
    void matmulInference() {
        auto c = infer(OpCode::Matmul, {{DType::F32, {5, 1, 2, 3}}, {DType::F32, {4, 3, 7}}});
        QCOMPARE(c.value().shape, (Shape{5, 4, 2, 7}));
        QCOMPARE(codeOf(infer(OpCode::Matmul, {{DType::F32, {2, 3}}, {DType::F32, {4, 2}}})),
                 ErrorCode::ShapeMismatch);
        QCOMPARE(codeOf(infer(OpCode::Matmul, {{DType::F32, {3}}, {DType::F32, {3, 2}}})),
                 ErrorCode::ShapeMismatch);
        QCOMPARE(codeOf(infer(OpCode::Matmul, {{DType::Bool, {2, 2}}, {DType::Bool, {2, 2}}})),
                 ErrorCode::UnsupportedDtype);
        const std::int64_t big = std::int64_t{1} << 32;
        QCOMPARE(codeOf(infer(OpCode::Matmul, {{DType::F32, {big, 1}}, {DType::F32, {1, big}}})),
                 ErrorCode::LimitExceeded);
    }
    void catalogVersionThree() {
        QCOMPARE(kCatalogVersion, 3);
        QCOMPARE(kOpCount, 71);
        QCOMPARE(opInfo(OpCode::Concat).arity, kVariadic);
        QCOMPARE(opInfo(OpCode::DropoutMask).arity, 0);
        QCOMPARE(opFromName("max_pool2d_indices"), std::optional<OpCode>(OpCode::MaxPool2dIndices));
        QCOMPARE(opInfo(OpCode::LayerNorm).tolerance.cls, ToleranceClass::Ulp);
        QCOMPARE(opInfo(OpCode::Conv2dWeightGrad).tolerance.cls, ToleranceClass::MatmulBound);
    }
    void indexingInference() {
        const TensorSpec x{DType::F32, {3, 4}};
        const TensorSpec index{DType::I64, {2, 4}};
        QCOMPARE(infer(OpCode::Gather, {x, index}, {{"dim", std::int64_t{0}}}).value(),
                 (TensorSpec{DType::F32, {2, 4}}));
        QCOMPARE(
            codeOf(infer(OpCode::Gather, {x, {DType::I64, {2, 5}}}, {{"dim", std::int64_t{0}}})),
            ErrorCode::ShapeMismatch);
        QCOMPARE(
            codeOf(infer(OpCode::Gather, {x, {DType::F32, {2, 4}}}, {{"dim", std::int64_t{0}}})),
            ErrorCode::UnsupportedDtype);
        QCOMPARE(codeOf(infer(OpCode::Gather, {x, index})),
                 ErrorCode::InvalidInput); // dim is required
        QCOMPARE(infer(OpCode::IndexSelect, {x, {DType::I32, {5}}}, {{"dim", std::int64_t{-1}}})
                     .value()
                     .shape,
                 (Shape{3, 5}));
        QCOMPARE(codeOf(infer(OpCode::IndexSelect, {x, index}, {{"dim", std::int64_t{0}}})),
                 ErrorCode::ShapeMismatch);
        QCOMPARE(infer(OpCode::Embedding, {{DType::F64, {10, 8}}, {DType::I64, {2, 3}}}).value(),
                 (TensorSpec{DType::F64, {2, 3, 8}}));
        QCOMPARE(codeOf(infer(OpCode::Embedding, {{DType::F64, {10}}, {DType::I64, {2}}})),
                 ErrorCode::ShapeMismatch);
        QCOMPARE(
            infer(OpCode::OneHot, {{DType::I32, {4}}}, {{"num_classes", std::int64_t{3}}}).value(),
            (TensorSpec{DType::I64, {4, 3}}));
        QCOMPARE(
            codeOf(infer(OpCode::OneHot, {{DType::I32, {4}}}, {{"num_classes", std::int64_t{0}}})),
            ErrorCode::InvalidInput);
        QCOMPARE(
            codeOf(infer(OpCode::OneHot, {{DType::F32, {4}}}, {{"num_classes", std::int64_t{3}}})),
            ErrorCode::UnsupportedDtype);
        const TensorSpec source{DType::F32, {3, 2}};
        QCOMPARE(infer(OpCode::IndexAdd, {x, {DType::I64, {2}}, source},
                       {{"dim", std::int64_t{1}}, {"alpha", 0.5}})
                     .value(),
                 x);
        QCOMPARE(codeOf(infer(OpCode::IndexAdd, {x, {DType::I64, {3}}, source},
                              {{"dim", std::int64_t{1}}})),
                 ErrorCode::ShapeMismatch);
        QCOMPARE(codeOf(infer(OpCode::IndexAdd,
                              {{DType::I32, {3}}, {DType::I64, {1}}, {DType::I32, {1}}},
                              {{"dim", std::int64_t{0}}, {"alpha", 0.5}})),
                 ErrorCode::InvalidInput);
    }
    void normalisationInference() {
        const TensorSpec x{DType::F32, {2, 3, 4}};
        const TensorSpec w{DType::F32, {3, 4}};
        const Attributes two{{"normalized_ndim", std::int64_t{2}}};
        QCOMPARE(infer(OpCode::LayerNorm, {x, w, w}, two).value(), x);
        QCOMPARE(codeOf(infer(OpCode::LayerNorm, {x, {DType::F32, {4}}, w}, two)),
                 ErrorCode::ShapeMismatch);
        QCOMPARE(
            codeOf(infer(OpCode::LayerNorm, {x, w, w}, {{"normalized_ndim", std::int64_t{4}}})),
            ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::LayerNorm, {x, w, w},
                              {{"normalized_ndim", std::int64_t{2}}, {"eps", -1.0}})),
                 ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::LayerNorm,
                              {{DType::I32, {2, 4}}, {DType::I32, {4}}, {DType::I32, {4}}},
                              {{"normalized_ndim", std::int64_t{1}}})),
                 ErrorCode::UnsupportedDtype);
        auto backward = [&](const char* output) {
            Attributes attrs = two;
            attrs["output"] = std::string(output);
            return infer(OpCode::LayerNormBackward, {x, x, w}, attrs);
        };
        QCOMPARE(backward("input").value(), x);
        QCOMPARE(backward("weight").value(), w);
        QCOMPARE(backward("bias").value(), w);
        QCOMPARE(codeOf(backward("mean")), ErrorCode::InvalidInput);
    }
    void layoutInference() {
        const TensorSpec a{DType::I64, {2, 3}};
        const TensorSpec b{DType::I64, {2, 5}};
        QCOMPARE(infer(OpCode::Concat, {a, b, a}, {{"dim", std::int64_t{1}}}).value().shape,
                 (Shape{2, 11}));
        QCOMPARE(infer(OpCode::Concat, {a}).value().shape, (Shape{2, 3}));
        QCOMPARE(codeOf(infer(OpCode::Concat, {a, b})), ErrorCode::ShapeMismatch);
        QCOMPARE(codeOf(infer(OpCode::Concat, {a, {DType::I32, {2, 3}}})),
                 ErrorCode::UnsupportedDtype);
        QCOMPARE(codeOf(infer(OpCode::Concat, {})), ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::Concat, std::vector<TensorSpec>(9, a))),
                 ErrorCode::InvalidInput);
        const TensorSpec x{DType::F32, {10, 4}};
        auto sliced = [&](std::int64_t start, std::int64_t end, std::int64_t step) {
            return infer(
                OpCode::Slice, {x},
                {{"dim", std::int64_t{0}}, {"start", start}, {"end", end}, {"step", step}});
        };
        QCOMPARE(sliced(2, 7, 2).value().shape, (Shape{3, 4}));
        QCOMPARE(sliced(-3, std::numeric_limits<std::int64_t>::max(), 1).value().shape,
                 (Shape{3, 4}));
        QCOMPARE(sliced(-100, -8, 1).value().shape, (Shape{2, 4}));
        QCOMPARE(sliced(8, 2, 1).value().shape, (Shape{0, 4}));
        QCOMPARE(codeOf(sliced(0, 5, 0)), ErrorCode::InvalidInput);
        QCOMPARE(infer(OpCode::Pad, {x}, {{"pads", IntList{1, 2, -3, 0}}}).value().shape,
                 (Shape{7, 7}));
        QCOMPARE(codeOf(infer(OpCode::Pad, {x}, {{"pads", IntList{-3, -2}}})),
                 ErrorCode::ShapeMismatch);
        QCOMPARE(codeOf(infer(OpCode::Pad, {x}, {{"pads", IntList{1}}})), ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::Pad, {x}, {{"pads", IntList{1, 1, 1, 1, 1, 1}}})),
                 ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::Pad, {a}, {{"pads", IntList{1, 1}}, {"value", 0.5}})),
                 ErrorCode::InvalidInput);
    }
    void windowInference() {
        const TensorSpec x{DType::F32, {2, 4, 9, 9}};
        const TensorSpec w{DType::F32, {6, 2, 3, 3}};
        const Attributes conv{
            {"stride", IntList{2, 2}}, {"padding", IntList{1, 1}}, {"groups", std::int64_t{2}}};
        QCOMPARE(infer(OpCode::Conv2d, {x, w}, conv).value().shape, (Shape{2, 6, 5, 5}));
        QCOMPARE(codeOf(infer(OpCode::Conv2d, {x, w})),
                 ErrorCode::ShapeMismatch); // groups 1: 4 ≠ 2 channels
        QCOMPARE(codeOf(infer(OpCode::Conv2d, {x, w}, {{"groups", std::int64_t{0}}})),
                 ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::Conv2d, {x, w},
                              {{"stride", IntList{1}}, {"groups", std::int64_t{2}}})),
                 ErrorCode::InvalidInput);
        QCOMPARE(
            codeOf(infer(OpCode::Conv2d, {{DType::F32, {1, 2, 2, 2}}, {DType::F32, {1, 2, 3, 3}}})),
            ErrorCode::ShapeMismatch);
        const TensorSpec gradOut{DType::F32, {2, 6, 5, 5}};
        Attributes inputGrad = conv;
        inputGrad["input_shape"] = IntList{2, 4, 9, 9};
        QCOMPARE(infer(OpCode::Conv2dInputGrad, {gradOut, w}, inputGrad).value(), x);
        inputGrad["input_shape"] = IntList{2, 4, 12, 9};
        QCOMPARE(codeOf(infer(OpCode::Conv2dInputGrad, {gradOut, w}, inputGrad)),
                 ErrorCode::ShapeMismatch);
        Attributes weightGrad = conv;
        weightGrad["weight_shape"] = IntList{6, 2, 3, 3};
        QCOMPARE(infer(OpCode::Conv2dWeightGrad, {x, gradOut}, weightGrad).value(), w);
        const Attributes pool{{"kernel", IntList{3, 3}},
                              {"stride", IntList{2, 2}},
                              {"padding", IntList{1, 1}},
                              {"ceil_mode", true}};
        QCOMPARE(infer(OpCode::MaxPool2d, {x}, pool).value().shape, (Shape{2, 4, 5, 5}));
        QCOMPARE(
            infer(OpCode::MaxPool2dIndices, {{DType::F64, {4, 8, 8}}}, {{"kernel", IntList{2, 2}}})
                .value(),
            (TensorSpec{DType::I64, {4, 4, 4}}));
        QCOMPARE(infer(OpCode::MaxPool2dBackward, {{DType::F32, {2, 4, 5, 5}}, x}, pool).value(),
                 x);
        QCOMPARE(codeOf(infer(OpCode::MaxPool2d, {x},
                              {{"kernel", IntList{2, 2}}, {"padding", IntList{2, 2}}})),
                 ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::MaxPool2d, {x})),
                 ErrorCode::InvalidInput); // kernel is required
        QCOMPARE(codeOf(infer(OpCode::MaxPool2d, {{DType::I32, {1, 4, 4}}},
                              {{"kernel", IntList{2, 2}}})),
                 ErrorCode::UnsupportedDtype);
        QCOMPARE(
            codeOf(infer(OpCode::MaxPool2d, {{DType::F32, {4, 4}}}, {{"kernel", IntList{2, 2}}})),
            ErrorCode::ShapeMismatch);
    }
    void hugeDimsAreRefusedNotOverflowed() {
        // A dim may be huge when another is 0; size arithmetic must refuse it, not overflow.
        const std::int64_t huge = std::numeric_limits<std::int64_t>::max();
        const TensorSpec empty{DType::F32, {0, huge}};
        QCOMPARE(codeOf(infer(OpCode::Concat, {empty, empty}, {{"dim", std::int64_t{1}}})),
                 ErrorCode::LimitExceeded);
        QCOMPARE(codeOf(infer(OpCode::Pad, {empty}, {{"pads", IntList{1, 1}}})),
                 ErrorCode::LimitExceeded);
        QCOMPARE(codeOf(infer(OpCode::MaxPool2d, {{DType::F32, {0, 1, 4, huge}}},
                              {{"kernel", IntList{2, 2}}})),
                 ErrorCode::LimitExceeded);
        QCOMPARE(codeOf(infer(OpCode::Conv2d,
                              {{DType::F32, {0, 2, 4, huge}}, {DType::F32, {1, 2, 1, 1}}},
                              {{"padding", IntList{1, 1}}})),
                 ErrorCode::LimitExceeded);
        QCOMPARE(codeOf(infer(OpCode::Conv2d,
                              {{DType::F32, {1, 4, 4, 4}}, {DType::F32, {0, huge, 1, 1}}},
                              {{"groups", std::int64_t{4}}})),
                 ErrorCode::ShapeMismatch);
    }
    void dropoutMaskInference() {
        const Attributes mask{{"shape", IntList{4, 5}}, {"p", 0.25}, {"seed", std::int64_t{42}}};
        QCOMPARE(infer(OpCode::DropoutMask, {}, mask).value(), (TensorSpec{DType::F32, {4, 5}}));
        Attributes f64 = mask;
        f64["dtype"] = std::string("f64");
        QCOMPARE(infer(OpCode::DropoutMask, {}, f64).value().dtype, DType::F64);
        f64["dtype"] = std::string("i32");
        QCOMPARE(codeOf(infer(OpCode::DropoutMask, {}, f64)), ErrorCode::UnsupportedDtype);
        Attributes certain = mask;
        certain["p"] = 1.0;
        QCOMPARE(codeOf(infer(OpCode::DropoutMask, {}, certain)), ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::DropoutMask, {}, {{"shape", IntList{2}}, {"p", 0.5}})),
                 ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::DropoutMask, {{DType::F32, {2}}}, mask)),
                 ErrorCode::InvalidInput);
    }
    void tolerances() {
        QCOMPARE(opInfo(OpCode::FloorDivide).tolerance.cls, ToleranceClass::Exact);
        QCOMPARE(opInfo(OpCode::Sum).tolerance.cls, ToleranceClass::SumBound);
        QCOMPARE(opInfo(OpCode::Matmul).tolerance.cls, ToleranceClass::MatmulBound);
        // γ_K·(|A||B|): K = 100 in f32, scale 3 → about 102·2⁻²⁴·3.
        const double bound =
            toleranceBound(opInfo(OpCode::Matmul).tolerance, DType::F32, 1.0, 3.0, 100);
        QVERIFY(bound > 1.8e-5 && bound < 1.9e-5);
        QCOMPARE(toleranceBound(opInfo(OpCode::Add).tolerance, DType::F32, 1.0, 1.0, 1), 0.0);
    }
};

QTEST_APPLESS_MAIN(TestOpCatalog)
#include "test_op_catalog.moc"
