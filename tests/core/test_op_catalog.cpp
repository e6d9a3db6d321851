// Tests of the op catalog: names, broadcasting, dtype and shape inference, attribute validation.
#include <QtTest/QtTest>

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
        QCOMPARE(infer(OpCode::Lt, {{DType::I32, {4}}, {DType::I32, {}}}).value().dtype, DType::Bool);
        auto where = infer(OpCode::Where, {{DType::Bool, {2, 1}}, {DType::F64, {3}}, {DType::F64, {}}});
        QCOMPARE(where.value(), (TensorSpec{DType::F64, {2, 3}}));
        QCOMPARE(codeOf(infer(OpCode::Add, {{DType::F32, {2}}, {DType::F64, {2}}})), ErrorCode::UnsupportedDtype);
        QCOMPARE(codeOf(infer(OpCode::Div, {{DType::I32, {2}}, {DType::I32, {2}}})), ErrorCode::UnsupportedDtype);
        QCOMPARE(codeOf(infer(OpCode::Exp, {{DType::I64, {2}}})), ErrorCode::UnsupportedDtype);
        QCOMPARE(codeOf(infer(OpCode::BitwiseAnd, {{DType::F32, {2}}, {DType::F32, {2}}})),
                 ErrorCode::UnsupportedDtype);
        QCOMPARE(codeOf(infer(OpCode::Where, {{DType::I32, {2}}, {DType::F32, {2}}, {DType::F32, {2}}})),
                 ErrorCode::UnsupportedDtype);
        QCOMPARE(codeOf(infer(OpCode::Mul, {{DType::F32, {2, 3}}, {DType::F32, {3, 2}}})), ErrorCode::ShapeMismatch);
        QCOMPARE(codeOf(infer(OpCode::Add, {{DType::F32, {2}}})), ErrorCode::InvalidInput);
    }
    void attributeValidation() {
        QCOMPARE(codeOf(infer(OpCode::Clamp, {{DType::F32, {2}}})), ErrorCode::InvalidInput);
        QVERIFY(infer(OpCode::Clamp, {{DType::I32, {2}}}, {{"min", std::int64_t{-3}}}).has_value());
        QCOMPARE(codeOf(infer(OpCode::Clamp, {{DType::I32, {2}}}, {{"min", 0.5}})), ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::Gelu, {{DType::F32, {2}}}, {{"approximate", std::string("fast")}})),
                 ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::Exp, {{DType::F32, {2}}}, {{"typo", true}})), ErrorCode::InvalidInput);
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
        QCOMPARE(infer(OpCode::Argmax, {x}, {{"dim", std::int64_t{1}}}).value(), (TensorSpec{DType::I64, {2, 4}}));
        QCOMPARE(codeOf(infer(OpCode::Sum, {x}, {{"dims", IntList{0, 0}}})), ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::Sum, {x}, {{"dims", IntList{3}}})), ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::Mean, {{DType::I32, {3}}})), ErrorCode::UnsupportedDtype);
        QCOMPARE(codeOf(infer(OpCode::Amax, {{DType::F32, {0, 3}}}, {{"dims", IntList{0}}})),
                 ErrorCode::ShapeMismatch);
        QVERIFY(infer(OpCode::Amax, {{DType::F32, {0, 3}}}, {{"dims", IntList{1}}}).has_value());
        QCOMPARE(codeOf(infer(OpCode::Var, {x}, {{"correction", std::int64_t{-1}}})), ErrorCode::InvalidInput);
        QCOMPARE(codeOf(infer(OpCode::Softmax, {x})), ErrorCode::InvalidInput);
    }
    void shapeOps() {
        const TensorSpec x{DType::F32, {2, 3, 4}};
        QCOMPARE(infer(OpCode::Reshape, {x}, {{"shape", IntList{4, -1}}}).value().shape, (Shape{4, 6}));
        QCOMPARE(codeOf(infer(OpCode::Reshape, {x}, {{"shape", IntList{5, -1}}})), ErrorCode::ShapeMismatch);
        QCOMPARE(codeOf(infer(OpCode::Reshape, {x}, {{"shape", IntList{-1, -1}}})), ErrorCode::ShapeMismatch);
        QCOMPARE(infer(OpCode::Permute, {x}, {{"dims", IntList{2, 0, 1}}}).value().shape, (Shape{4, 2, 3}));
        QCOMPARE(codeOf(infer(OpCode::Permute, {x}, {{"dims", IntList{0, 0, 1}}})), ErrorCode::InvalidInput);
        QCOMPARE(infer(OpCode::Expand, {{DType::F32, {3, 1}}}, {{"shape", IntList{2, -1, 5}}}).value().shape,
                 (Shape{2, 3, 5}));
        QCOMPARE(codeOf(infer(OpCode::Expand, {{DType::F32, {3}}}, {{"shape", IntList{4}}})), ErrorCode::ShapeMismatch);
        QCOMPARE(infer(OpCode::Cast, {x}, {{"dtype", std::string("i64")}}).value().dtype, DType::I64);
        QCOMPARE(codeOf(infer(OpCode::Cast, {x}, {{"dtype", std::string("f16")}})), ErrorCode::UnsupportedDtype);
    }
    void matmulInference() {
        auto c = infer(OpCode::Matmul, {{DType::F32, {5, 1, 2, 3}}, {DType::F32, {4, 3, 7}}});
        QCOMPARE(c.value().shape, (Shape{5, 4, 2, 7}));
        QCOMPARE(codeOf(infer(OpCode::Matmul, {{DType::F32, {2, 3}}, {DType::F32, {4, 2}}})), ErrorCode::ShapeMismatch);
        QCOMPARE(codeOf(infer(OpCode::Matmul, {{DType::F32, {3}}, {DType::F32, {3, 2}}})), ErrorCode::ShapeMismatch);
        QCOMPARE(codeOf(infer(OpCode::Matmul, {{DType::Bool, {2, 2}}, {DType::Bool, {2, 2}}})),
                 ErrorCode::UnsupportedDtype);
        const std::int64_t big = std::int64_t{1} << 32;
        QCOMPARE(codeOf(infer(OpCode::Matmul, {{DType::F32, {big, 1}}, {DType::F32, {1, big}}})),
                 ErrorCode::LimitExceeded);
    }
    void tolerances() {
        QCOMPARE(opInfo(OpCode::FloorDivide).tolerance.cls, ToleranceClass::Exact);
        QCOMPARE(opInfo(OpCode::Sum).tolerance.cls, ToleranceClass::SumBound);
        QCOMPARE(opInfo(OpCode::Matmul).tolerance.cls, ToleranceClass::MatmulBound);
        // γ_K·(|A||B|): K = 100 in f32, scale 3 → about 102·2⁻²⁴·3.
        const double bound = toleranceBound(opInfo(OpCode::Matmul).tolerance, DType::F32, 1.0, 3.0, 100);
        QVERIFY(bound > 1.8e-5 && bound < 1.9e-5);
        QCOMPARE(toleranceBound(opInfo(OpCode::Add).tolerance, DType::F32, 1.0, 1.0, 1), 0.0);
    }
};

QTEST_APPLESS_MAIN(TestOpCatalog)
#include "test_op_catalog.moc"
