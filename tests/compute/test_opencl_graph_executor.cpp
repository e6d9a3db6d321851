// The OpenCL graph executor against the CPU reference, op by op on random inputs with edge values
// (NaN/±Inf/±0, negative and extreme integers, empty and broadcast shapes): bit for bit where both
// run the shared math (kernels/goblin_math.h), within the op's tolerance class where the OpenCL
// side uses the platform's transcendentals (docs/ops.md, "Backend agreement"). Also the shared
// graph vectors and the runtime errors. Runs on PoCL in CI; skips without an OpenCL device unless
// GOBLIN_REQUIRE_OPENCL=1.
#include <QtTest/QtTest>

#include <boost/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

#include "goblin/compute/opencl_graph_executor.hpp"
#include "goblin/core/graph/graph_json.hpp"
#include "goblin/reference/graph_executor.hpp"

using goblin::ErrorCode;
using goblin::compute::OpenClGraphExecutor;
using namespace goblin::core;
using namespace goblin::core::ops;
namespace json = boost::json;

namespace {

struct OpCase {
    OpCode op;
    std::vector<DType> dtypes;              // the op runs once per dtype (where: the value dtype)
    std::vector<std::vector<Shape>> shapes; // argument shapes, one list per run
    Attributes attrs;
};

// Ops whose kernels may call the platform's math (goblin_math.h without fp64 on the device):
// compared under the op's tolerance there. With fp64, every op must agree bit for bit (NaN: any
// NaN).
bool g_platformMath = false;
bool usesPlatformMath(OpCode op) {
    switch (op) {
    case OpCode::Pow:
    case OpCode::Exp:
    case OpCode::Log:
    case OpCode::Tanh:
    case OpCode::Sigmoid:
    case OpCode::Erf:
    case OpCode::Lgamma:
    case OpCode::Gelu:
    case OpCode::Softmax:
    case OpCode::LogSoftmax:
        return g_platformMath;
    default:
        return false;
    }
}

double floatValue(std::mt19937_64& engine) {
    std::uniform_real_distribution<double> uniform(-3.0, 3.0);
    std::uniform_int_distribution<int> pick(0, 19);
    switch (pick(engine)) {
    case 0:
        return std::numeric_limits<double>::quiet_NaN();
    case 1:
        return INFINITY;
    case 2:
        return -INFINITY;
    case 3:
        return 0.0;
    case 4:
        return -0.0;
    case 5:
        return uniform(engine) * 1e4;
    case 6:
        return std::round(uniform(engine) * 4); // integers: exact floor_divide, lgamma poles
    default:
        return uniform(engine);
    }
}

template <class T> T intValue(std::mt19937_64& engine) {
    std::uniform_int_distribution<int> pick(0, 19);
    std::uniform_int_distribution<std::int64_t> small(-40, 40);
    switch (pick(engine)) {
    case 0:
        return std::numeric_limits<T>::min();
    case 1:
        return std::numeric_limits<T>::max();
    case 2:
        return -1;
    default:
        return static_cast<T>(small(engine));
    }
}

Tensor randomTensor(DType dtype, const Shape& shape, std::mt19937_64& engine, bool nonZero) {
    Tensor tensor = Tensor::allocate(dtype, shape).value();
    const std::size_t n = static_cast<std::size_t>(tensor.elementCount());
    for (std::size_t i = 0; i < n; ++i) {
        switch (dtype) {
        case DType::F32:
            tensor.values<float>()[i] = static_cast<float>(floatValue(engine));
            break;
        case DType::F64:
            tensor.values<double>()[i] = floatValue(engine);
            break;
        case DType::I32: {
            const auto v = intValue<std::int32_t>(engine);
            tensor.values<std::int32_t>()[i] = nonZero && v == 0 ? 3 : v;
            break;
        }
        case DType::I64: {
            const auto v = intValue<std::int64_t>(engine);
            tensor.values<std::int64_t>()[i] = nonZero && v == 0 ? -3 : v;
            break;
        }
        case DType::Bool:
            tensor.values<bool>()[i] = (engine() & 1) != 0;
            break;
        }
    }
    return tensor;
}

struct SingleNode {
    graph::Graph graph;
    graph::GraphPlan plan;
};

std::optional<SingleNode> singleNodeGraph(OpCode op, const std::vector<TensorSpec>& specs,
                                          const Attributes& attrs, QString& problem) {
    graph::Graph g;
    std::vector<graph::ValueId> args;
    for (std::size_t i = 0; i < specs.size(); ++i) {
        g.inputs.push_back({static_cast<graph::ValueId>(i), specs[i]});
        args.push_back(static_cast<graph::ValueId>(i));
    }
    const auto id = static_cast<graph::ValueId>(specs.size());
    g.nodes.push_back({id, op, args, attrs});
    g.outputs = {id};
    auto plan = graph::validateGraph(g);
    if (!plan) {
        problem = QString::fromStdString(plan.error().describe());
        return std::nullopt;
    }
    return SingleNode{std::move(g), std::move(*plan)};
}

template <class T> bool sameValue(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(a) || std::isnan(b)) // NaN sign and payload differ between hardware
            return std::isnan(a) && std::isnan(b);
    }
    return a == b;
}

// The number of elements each output element depends on (K of the tolerance classes).
std::int64_t reducedCount(OpCode op, const Tensor& x, const Tensor& out) {
    if (op == OpCode::Softmax || op == OpCode::LogSoftmax || op == OpCode::Matmul)
        return out.elementCount() == 0 ? 0 : x.shape().empty() ? 1 : x.shape().back();
    return 1;
}

template <class T>
QString compareValues(OpCode op, const std::vector<Tensor>& args, const Tensor& want,
                      const Tensor& got) {
    const bool tolerant = usesPlatformMath(op);
    const Tolerance tolerance = opInfo(op).tolerance;
    const auto w = want.values<T>();
    const auto g = got.values<T>();
    for (std::size_t i = 0; i < w.size(); ++i) {
        if (sameValue(w[i], g[i]))
            continue;
        if constexpr (std::is_floating_point_v<T>) {
            if (tolerant && std::isfinite(w[i]) && std::isfinite(g[i])) {
                // Unary ops scale by their input element; softmax lines by nothing extra.
                const bool sameShape = args[0].shape() == want.shape();
                const double scale =
                    sameShape ? std::abs(static_cast<double>(args[0].values<T>()[i])) : 0.0;
                const double bound =
                    toleranceBound(tolerance, want.dtype(), static_cast<double>(w[i]), scale,
                                   reducedCount(op, args[0], want));
                if (std::abs(static_cast<double>(w[i]) - static_cast<double>(g[i])) <= bound)
                    continue;
            }
        }
        return QStringLiteral("element %1: reference %2, OpenCL %3")
            .arg(i)
            .arg(static_cast<double>(w[i]), 0, 'g', 17)
            .arg(static_cast<double>(g[i]), 0, 'g', 17);
    }
    return {};
}

QString compareTensors(OpCode op, const std::vector<Tensor>& args, const Tensor& want,
                       const Tensor& got) {
    if (want.dtype() != got.dtype() || want.shape() != got.shape())
        return QStringLiteral("dtype or shape differ");
    switch (want.dtype()) {
    case DType::F32:
        return compareValues<float>(op, args, want, got);
    case DType::F64:
        return compareValues<double>(op, args, want, got);
    case DType::I32:
        return compareValues<std::int32_t>(op, args, want, got);
    case DType::I64:
        return compareValues<std::int64_t>(op, args, want, got);
    case DType::Bool:
        return compareValues<bool>(op, args, want, got);
    }
    return {};
}

const std::vector<DType> kAll{DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool};
const std::vector<DType> kNumeric{DType::F32, DType::F64, DType::I32, DType::I64};
const std::vector<DType> kFloat{DType::F32, DType::F64};
const std::vector<DType> kBits{DType::I32, DType::I64, DType::Bool};

const std::vector<std::vector<Shape>> kBinaryShapes{{{3, 4}, {3, 4}},       {{2, 3, 4}, {4}},
                                                    {{2, 1, 3}, {1, 5, 1}}, {{}, {3}},
                                                    {{0, 3}, {3}},          {{1000}, {1000}}};
const std::vector<std::vector<Shape>> kUnaryShapes{{{3, 4}}, {{}}, {{0, 5}}, {{1000}}};
const std::vector<std::vector<Shape>> kReduceShapes{{{3, 4, 5}}, {{6}}};

std::vector<OpCase> opCases() {
    std::vector<OpCase> cases;
    for (OpCode op : {OpCode::Add, OpCode::Sub, OpCode::Mul, OpCode::Maximum, OpCode::Minimum,
                      OpCode::FloorDivide, OpCode::Remainder})
        cases.push_back({op, kNumeric, kBinaryShapes, {}});
    for (OpCode op : {OpCode::Div, OpCode::Pow})
        cases.push_back({op, kFloat, kBinaryShapes, {}});
    for (OpCode op : {OpCode::Eq, OpCode::Ne, OpCode::Lt, OpCode::Le, OpCode::Gt, OpCode::Ge,
                      OpCode::LogicalAnd, OpCode::LogicalOr, OpCode::LogicalXor})
        cases.push_back({op, kAll, kBinaryShapes, {}});
    for (OpCode op : {OpCode::BitwiseAnd, OpCode::BitwiseOr, OpCode::BitwiseXor})
        cases.push_back({op, kBits, kBinaryShapes, {}});
    cases.push_back({OpCode::BitwiseNot, kBits, kUnaryShapes, {}});
    cases.push_back({OpCode::LogicalNot, kAll, kUnaryShapes, {}});
    cases.push_back({OpCode::IsNan, kAll, kUnaryShapes, {}});
    for (OpCode op : {OpCode::Neg, OpCode::Abs, OpCode::Relu})
        cases.push_back({op, kNumeric, kUnaryShapes, {}});
    for (OpCode op : {OpCode::Exp, OpCode::Log, OpCode::Sqrt, OpCode::Rsqrt, OpCode::Tanh,
                      OpCode::Sigmoid, OpCode::Erf, OpCode::Lgamma, OpCode::Gelu})
        cases.push_back({op, kFloat, kUnaryShapes, {}});
    cases.push_back({OpCode::Gelu, kFloat, kUnaryShapes, {{"approximate", std::string("tanh")}}});
    cases.push_back({OpCode::Where,
                     kAll,
                     {{{3, 4}, {3, 4}, {3, 4}}, {{2, 1, 4}, {3, 1}, {4}}, {{0}, {1}, {}}},
                     {}});
    cases.push_back({OpCode::Clamp,
                     kNumeric,
                     kUnaryShapes,
                     {{"min", std::int64_t{-2}}, {"max", std::int64_t{5}}}});
    cases.push_back({OpCode::Clamp, kFloat, kUnaryShapes, {{"min", 0.25}}});
    cases.push_back({OpCode::Clamp,
                     kNumeric,
                     kUnaryShapes,
                     {{"min", std::int64_t{3}}, {"max", std::int64_t{-3}}}});
    for (OpCode op : {OpCode::Sum, OpCode::Prod, OpCode::Amax, OpCode::Amin}) {
        cases.push_back({op, kNumeric, kReduceShapes, {}});
        cases.push_back(
            {op, kNumeric, {{{3, 4, 5}}}, {{"dims", IntList{0, 2}}, {"keepdim", true}}});
        cases.push_back({op, kNumeric, {{{3, 4, 5}}, {{2, 300}}}, {{"dims", IntList{-1}}}});
    }
    cases.push_back({OpCode::Sum, kNumeric, {{{0, 4}}}, {{"dims", IntList{0}}}});
    cases.push_back({OpCode::Prod, kNumeric, {{{0, 4}}}, {{"dims", IntList{0}}}});
    for (OpCode op : {OpCode::Mean, OpCode::Var}) {
        cases.push_back({op, kFloat, kReduceShapes, {}});
        cases.push_back({op, kFloat, {{{3, 4, 5}}}, {{"dims", IntList{1}}, {"keepdim", true}}});
        cases.push_back({op, kFloat, {{{0, 4}}}, {{"dims", IntList{0}}}});
    }
    cases.push_back({OpCode::Var,
                     kFloat,
                     {{{3, 4, 5}}},
                     {{"dims", IntList{2}}, {"correction", std::int64_t{0}}}});
    cases.push_back({OpCode::Var, kFloat, {{{3, 1}}}, {{"dims", IntList{1}}}});
    for (OpCode op : {OpCode::Argmax, OpCode::Argmin}) {
        cases.push_back({op, kNumeric, kReduceShapes, {}});
        cases.push_back(
            {op, kNumeric, {{{3, 4, 5}}}, {{"dim", std::int64_t{1}}, {"keepdim", true}}});
    }
    cases.push_back(
        {OpCode::Cumsum, kNumeric, {{{3, 4, 5}}, {{0, 3}}}, {{"dim", std::int64_t{1}}}});
    cases.push_back({OpCode::Cumsum, kNumeric, {{{7}}}, {{"dim", std::int64_t{0}}}});
    for (OpCode op : {OpCode::Softmax, OpCode::LogSoftmax}) {
        cases.push_back({op, kFloat, {{{3, 4, 5}}, {{4, 0}}}, {{"dim", std::int64_t{-1}}}});
        cases.push_back({op, kFloat, {{{3, 4, 5}}}, {{"dim", std::int64_t{0}}}});
    }
    for (DType to : kAll)
        cases.push_back(
            {OpCode::Cast, kAll, {{{64}}, {{0}}}, {{"dtype", std::string(wireName(to))}}});
    cases.push_back({OpCode::Reshape, kAll, {{{3, 4}}}, {{"shape", IntList{2, -1, 3}}}});
    cases.push_back({OpCode::Permute, kAll, {{{2, 3, 4}}}, {{"dims", IntList{2, 0, 1}}}});
    cases.push_back({OpCode::Permute, kAll, {{{0, 3}}}, {{"dims", IntList{1, 0}}}});
    cases.push_back({OpCode::Expand, kAll, {{{3, 1}}}, {{"shape", IntList{2, 3, 4}}}});
    cases.push_back({OpCode::Expand, kAll, {{{1, 4}}}, {{"shape", IntList{-1, 4}}}});
    cases.push_back({OpCode::Matmul,
                     kNumeric,
                     {{{3, 4}, {4, 5}},
                      {{2, 3, 4}, {4, 2}},
                      {{1, 3, 4}, {2, 4, 2}},
                      {{0, 3}, {3, 2}},
                      {{3, 0}, {0, 2}},
                      {{17, 64}, {64, 9}}},
                     {}});
    return cases;
}

// Catalog 3 cases: arguments whose indexBound is > 0 are index tensors with values in [0, bound).
struct IndexedCase {
    OpCode op;
    std::vector<TensorSpec> specs;
    Attributes attrs;
    std::vector<std::int64_t> indexBound;
};

Tensor indexTensor(const TensorSpec& spec, std::int64_t bound, std::mt19937_64& engine) {
    Tensor tensor = Tensor::allocate(spec.dtype, spec.shape).value();
    std::uniform_int_distribution<std::int64_t> pick(0, bound - 1);
    for (std::size_t i = 0; i < static_cast<std::size_t>(tensor.elementCount()); ++i) {
        if (spec.dtype == DType::I32)
            tensor.values<std::int32_t>()[i] = static_cast<std::int32_t>(pick(engine));
        else
            tensor.values<std::int64_t>()[i] = pick(engine);
    }
    return tensor;
}

std::vector<IndexedCase> catalog3Cases() {
    using D = DType;
    const std::int64_t huge = std::numeric_limits<std::int64_t>::max();
    return {
        {OpCode::Gather, {{D::F32, {3, 4}}, {D::I64, {3, 2}}}, {{"dim", std::int64_t{1}}}, {0, 4}},
        {OpCode::Gather, {{D::I32, {4, 3}}, {D::I32, {2, 3}}}, {{"dim", std::int64_t{0}}}, {0, 4}},
        {OpCode::Gather,
         {{D::Bool, {2, 3, 4}}, {D::I64, {2, 3, 5}}},
         {{"dim", std::int64_t{-1}}},
         {0, 4}},
        {OpCode::IndexSelect,
         {{D::F64, {5, 3}}, {D::I64, {4}}},
         {{"dim", std::int64_t{0}}},
         {0, 5}},
        {OpCode::IndexSelect,
         {{D::I64, {2, 5, 3}}, {D::I32, {7}}},
         {{"dim", std::int64_t{1}}},
         {0, 5}},
        {OpCode::IndexSelect,
         {{D::F32, {4, 3}}, {D::I64, {}}},
         {{"dim", std::int64_t{-1}}},
         {0, 3}},
        {OpCode::Embedding, {{D::F32, {10, 4}}, {D::I64, {2, 3}}}, {}, {0, 10}},
        {OpCode::Embedding, {{D::F64, {3, 2}}, {D::I32, {5}}}, {}, {0, 3}},
        {OpCode::OneHot, {{D::I64, {5}}}, {{"num_classes", std::int64_t{6}}}, {6}},
        {OpCode::OneHot, {{D::I32, {2, 3}}}, {{"num_classes", std::int64_t{2}}}, {2}},
        {OpCode::IndexAdd,
         {{D::F32, {5, 3}}, {D::I64, {9}}, {D::F32, {9, 3}}},
         {{"dim", std::int64_t{0}}},
         {0, 5, 0}},
        {OpCode::IndexAdd,
         {{D::F64, {5, 3}}, {D::I32, {4}}, {D::F64, {4, 3}}},
         {{"dim", std::int64_t{0}}, {"alpha", 2.5}},
         {0, 5, 0}},
        {OpCode::IndexAdd,
         {{D::I64, {2, 5}}, {D::I32, {6}}, {D::I64, {2, 6}}},
         {{"dim", std::int64_t{1}}, {"alpha", std::int64_t{3}}},
         {0, 5, 0}},
        {OpCode::IndexAdd,
         {{D::I32, {0, 5}}, {D::I64, {2}}, {D::I32, {0, 2}}},
         {{"dim", std::int64_t{1}}},
         {0, 5, 0}},
        {OpCode::Concat,
         {{D::F32, {2, 3}}, {D::F32, {2, 0}}, {D::F32, {2, 4}}},
         {{"dim", std::int64_t{1}}},
         {}},
        {OpCode::Concat, {{D::I64, {1, 2}}, {D::I64, {3, 2}}}, {{"dim", std::int64_t{0}}}, {}},
        {OpCode::Concat,
         {{D::Bool, {2, 2, 1}}, {D::Bool, {2, 2, 3}}},
         {{"dim", std::int64_t{-1}}},
         {}},
        {OpCode::Slice,
         {{D::F32, {5, 6}}},
         {{"dim", std::int64_t{1}},
          {"start", std::int64_t{1}},
          {"end", std::int64_t{5}},
          {"step", std::int64_t{2}}},
         {}},
        {OpCode::Slice, {{D::I32, {7}}}, {{"start", std::int64_t{-3}}, {"end", huge}}, {}},
        {OpCode::Slice,
         {{D::F64, {4, 3}}},
         {{"start", std::int64_t{3}}, {"end", std::int64_t{1}}},
         {}},
        {OpCode::Pad, {{D::F32, {2, 3}}}, {{"pads", IntList{1, 2, -1, 1}}, {"value", 7.5}}, {}},
        {OpCode::Pad, {{D::I64, {3}}}, {{"pads", IntList{2, 0}}, {"value", std::int64_t{-1}}}, {}},
        {OpCode::Pad,
         {{D::Bool, {2, 2}}},
         {{"pads", IntList{1, 1}}, {"value", std::int64_t{1}}},
         {}},
        {OpCode::DropoutMask,
         {},
         {{"shape", IntList{7, 9}},
          {"p", 0.3},
          {"seed", std::int64_t{42}},
          {"offset", std::int64_t{5}}},
         {}},
        {OpCode::DropoutMask,
         {},
         {{"shape", IntList{1000}},
          {"p", 0.5},
          {"seed", std::int64_t{-7}},
          {"dtype", std::string("f64")}},
         {}},
        {OpCode::DropoutMask,
         {},
         {{"shape", IntList{16}}, {"p", 0.0}, {"seed", std::int64_t{1}}},
         {}},
        {OpCode::Conv2d, {{D::F32, {2, 3, 7, 6}}, {D::F32, {4, 3, 3, 2}}}, {}, {}},
        {OpCode::Conv2d,
         {{D::F64, {1, 4, 9, 8}}, {D::F64, {6, 2, 3, 3}}},
         {{"stride", IntList{2, 1}},
          {"padding", IntList{1, 2}},
          {"dilation", IntList{2, 1}},
          {"groups", std::int64_t{2}}},
         {}},
        {OpCode::Conv2dInputGrad,
         {{D::F32, {2, 4, 4, 3}}, {D::F32, {4, 3, 3, 2}}},
         {{"input_shape", IntList{2, 3, 8, 6}},
          {"stride", IntList{2, 2}},
          {"padding", IntList{1, 0}}},
         {}},
        {OpCode::Conv2dInputGrad,
         {{D::F64, {1, 6, 4, 10}}, {D::F64, {6, 2, 3, 3}}},
         {{"input_shape", IntList{1, 4, 9, 8}},
          {"stride", IntList{2, 1}},
          {"padding", IntList{1, 2}},
          {"dilation", IntList{2, 1}},
          {"groups", std::int64_t{2}}},
         {}},
        {OpCode::Conv2dWeightGrad,
         {{D::F32, {2, 3, 8, 6}}, {D::F32, {2, 4, 4, 3}}},
         {{"weight_shape", IntList{4, 3, 3, 2}},
          {"stride", IntList{2, 2}},
          {"padding", IntList{1, 0}}},
         {}},
        {OpCode::MaxPool2d,
         {{D::F32, {2, 3, 9, 8}}},
         {{"kernel", IntList{3, 2}}, {"stride", IntList{2, 1}}},
         {}},
        {OpCode::MaxPool2d,
         {{D::F64, {3, 7, 7}}},
         {{"kernel", IntList{3, 3}},
          {"stride", IntList{2, 2}},
          {"padding", IntList{1, 1}},
          {"ceil_mode", true}},
         {}},
        {OpCode::MaxPool2d,
         {{D::F32, {1, 2, 9, 9}}},
         {{"kernel", IntList{2, 3}}, {"dilation", IntList{2, 2}}},
         {}},
        {OpCode::MaxPool2dIndices,
         {{D::F32, {2, 3, 9, 8}}},
         {{"kernel", IntList{3, 3}}, {"stride", IntList{1, 2}}},
         {}},
        {OpCode::MaxPool2dBackward,
         {{D::F32, {2, 3, 7, 4}}, {D::F32, {2, 3, 9, 8}}},
         {{"kernel", IntList{3, 2}}, {"stride", IntList{1, 2}}},
         {}},
        {OpCode::MaxPool2dBackward,
         {{D::F64, {3, 4, 4}}, {D::F64, {3, 7, 7}}},
         {{"kernel", IntList{3, 3}},
          {"stride", IntList{2, 2}},
          {"padding", IntList{1, 1}},
          {"ceil_mode", true}},
         {}},
        {OpCode::LayerNorm,
         {{D::F32, {4, 3, 8}}, {D::F32, {8}}, {D::F32, {8}}},
         {{"normalized_ndim", std::int64_t{1}}},
         {}},
        {OpCode::LayerNorm, // two groups of eight rows and five more
         {{D::F32, {21, 33}}, {D::F32, {33}}, {D::F32, {33}}},
         {{"normalized_ndim", std::int64_t{1}}},
         {}},
        {OpCode::LayerNorm,
         {{D::F64, {2, 3, 5}}, {D::F64, {3, 5}}, {D::F64, {3, 5}}},
         {{"normalized_ndim", std::int64_t{2}}, {"eps", 1e-3}},
         {}},
        {OpCode::LayerNormBackward,
         {{D::F32, {4, 3, 8}}, {D::F32, {4, 3, 8}}, {D::F32, {8}}},
         {{"normalized_ndim", std::int64_t{1}}, {"output", std::string("input")}},
         {}},
        {OpCode::LayerNormBackward,
         {{D::F32, {4, 3, 8}}, {D::F32, {4, 3, 8}}, {D::F32, {8}}},
         {{"normalized_ndim", std::int64_t{1}}, {"output", std::string("weight")}},
         {}},
        {OpCode::LayerNormBackward,
         {{D::F64, {21, 33}}, {D::F64, {21, 33}}, {D::F64, {33}}},
         {{"normalized_ndim", std::int64_t{1}}, {"output", std::string("input")}},
         {}},
        {OpCode::LayerNormBackward,
         {{D::F32, {21, 33}}, {D::F32, {21, 33}}, {D::F32, {33}}},
         {{"normalized_ndim", std::int64_t{1}}, {"output", std::string("weight")}},
         {}},
        {OpCode::LayerNormBackward,
         {{D::F64, {2, 3, 5}}, {D::F64, {2, 3, 5}}, {D::F64, {3, 5}}},
         {{"normalized_ndim", std::int64_t{2}}, {"output", std::string("bias")}},
         {}},
    };
}

QString describeCase(const OpCase& c, DType dtype, const std::vector<Shape>& shapes) {
    QString text =
        QString::fromUtf8(opInfo(c.op).name.data(), static_cast<int>(opInfo(c.op).name.size())) +
        " " + QString::fromUtf8(wireName(dtype).data(), static_cast<int>(wireName(dtype).size()));
    for (const Shape& shape : shapes) {
        text += " [";
        for (std::int64_t dim : shape)
            text += QString::number(dim) + ",";
        text += "]";
    }
    return text;
}

// Runs every case of opCases() on `executor` and the reference; false when a graph or a run
// fails outright, mismatches go to `failures`.
bool checkEveryOp(OpenClGraphExecutor& executor, int& runs, QStringList& failures) {
    std::mt19937_64 engine(20261129);
    for (const OpCase& c : opCases()) {
        for (DType dtype : c.dtypes) {
            for (const auto& shapes : c.shapes) {
                const QString name = describeCase(c, dtype, shapes);
                std::vector<TensorSpec> specs;
                for (std::size_t i = 0; i < shapes.size(); ++i)
                    specs.push_back(
                        {c.op == OpCode::Where && i == 0 ? DType::Bool : dtype, shapes[i]});
                QString problem;
                auto single = singleNodeGraph(c.op, specs, c.attrs, problem);
                std::vector<Tensor> inputs;
                const bool division = c.op == OpCode::FloorDivide || c.op == OpCode::Remainder;
                for (std::size_t i = 0; i < specs.size() && single; ++i)
                    inputs.push_back(
                        randomTensor(specs[i].dtype, specs[i].shape, engine, division && i == 1));
                auto want = single
                                ? goblin::reference::runGraph(single->graph, single->plan, inputs)
                                : tl::unexpected(goblin::Error{});
                auto got = single ? executor.run(single->graph, single->plan, inputs)
                                  : tl::unexpected(goblin::Error{});
                if (!single || !want || !got) {
                    qWarning("%s: %s", qPrintable(name),
                             !single ? qPrintable(problem)
                             : !want ? want.error().describe().c_str()
                                     : got.error().describe().c_str());
                    return false;
                }
                const QString mismatch = compareTensors(c.op, inputs, (*want)[0], (*got)[0]);
                if (!mismatch.isEmpty())
                    failures << name + ": " + mismatch;
                ++runs;
            }
        }
    }
    return true;
}

json::value readJson(const std::string& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return json::parse(text.str());
}

// The vectors' own rule (as test_reference_graphs): |Δ| ≤ atol + rtol·|want|, NaN matches NaN.
QString closeTo(const Tensor& want, const Tensor& got, double rtol, double atol) {
    if (want.dtype() != got.dtype() || want.shape() != got.shape())
        return QStringLiteral("dtype or shape differ");
    auto as = [](const Tensor& t, std::size_t i) -> double {
        switch (t.dtype()) {
        case DType::F32:
            return t.values<float>()[i];
        case DType::F64:
            return t.values<double>()[i];
        case DType::I32:
            return t.values<std::int32_t>()[i];
        case DType::I64:
            return static_cast<double>(t.values<std::int64_t>()[i]);
        case DType::Bool:
            return t.values<bool>()[i] ? 1 : 0;
        }
        return 0;
    };
    for (std::size_t i = 0; i < static_cast<std::size_t>(want.elementCount()); ++i) {
        const double w = as(want, i);
        const double g = as(got, i);
        const bool ok = std::isnan(w) || std::isnan(g) ? std::isnan(w) && std::isnan(g)
                        : std::isinf(w) || std::isinf(g)
                            ? w == g
                            : std::abs(w - g) <= atol + rtol * std::abs(w);
        if (!ok)
            return QStringLiteral("element %1: want %2, got %3")
                .arg(i)
                .arg(w, 0, 'g', 17)
                .arg(g, 0, 'g', 17);
    }
    return {};
}

Tensor tensorOf(const json::value& value) {
    return graph::decodeTensorJson(json::serialize(value), std::size_t{1} << 24).value();
}

} // namespace

class TestOpenClGraphExecutor : public QObject {
    Q_OBJECT

    std::optional<OpenClGraphExecutor> m_executor;

    OpenClGraphExecutor& executor() { return *m_executor; }

private Q_SLOTS:
    void initTestCase() {
        auto created = OpenClGraphExecutor::create(0);
        if (!created) {
            if (qEnvironmentVariableIntValue("GOBLIN_REQUIRE_OPENCL") == 1)
                QFAIL(qPrintable("no OpenCL device, but GOBLIN_REQUIRE_OPENCL=1: " +
                                 QString::fromStdString(created.error().describe())));
            QSKIP("no OpenCL device on this machine: skipping every OpenCL graph test");
        }
        m_executor.emplace(std::move(*created));
        qInfo("OpenCL device 0: %s (%s)", executor().device().name.c_str(),
              executor().device().platform.c_str());
    }

    // Every op of catalog 2, every dtype it takes, several shapes: OpenCL equals the reference.
    void everyOpMatchesTheReference() {
        g_platformMath = !executor().device().fp64;
        int runs = 0;
        QStringList failures;
        QVERIFY(checkEveryOp(executor(), runs, failures));
        QVERIFY2(failures.isEmpty(), qPrintable(failures.join("\n")));
        qInfo("%d single-op graphs agree", runs);
        // PoCL computes every dtype exactly: no op of catalog 2 fell back to the CPU.
        if (executor().device().fp64)
            QVERIFY(executor().fellBackOps().empty());
    }

    // The catalog 3 ops: indexing, layout, dropout_mask, conv2d, max_pool2d, layer_norm.
    void catalog3OpsMatchTheReference() {
        std::mt19937_64 engine(3);
        QStringList failures;
        for (const IndexedCase& c : catalog3Cases()) {
            const QString name = QString::fromUtf8(opInfo(c.op).name.data(),
                                                   static_cast<int>(opInfo(c.op).name.size()));
            QString problem;
            auto single = singleNodeGraph(c.op, c.specs, c.attrs, problem);
            QVERIFY2(single.has_value(), qPrintable(name + ": " + problem));
            std::vector<Tensor> inputs;
            for (std::size_t i = 0; i < c.specs.size(); ++i)
                inputs.push_back(
                    i < c.indexBound.size() && c.indexBound[i] > 0
                        ? indexTensor(c.specs[i], c.indexBound[i], engine)
                        : randomTensor(c.specs[i].dtype, c.specs[i].shape, engine, false));
            auto want = goblin::reference::runGraph(single->graph, single->plan, inputs);
            auto got = executor().run(single->graph, single->plan, inputs);
            QVERIFY2(want.has_value(),
                     qPrintable(name + ": " +
                                (want ? "" : QString::fromStdString(want.error().describe()))));
            QVERIFY2(got.has_value(),
                     qPrintable(name + ": " +
                                (got ? "" : QString::fromStdString(got.error().describe()))));
            const QString mismatch = compareTensors(c.op, inputs, (*want)[0], (*got)[0]);
            if (!mismatch.isEmpty())
                failures << name + ": " + mismatch;
        }
        QVERIFY2(failures.isEmpty(), qPrintable(failures.join("\n")));
        // Every op of the catalog has a kernel: nothing here ran on the CPU.
        QVERIFY(OpenClGraphExecutor::hasKernel(OpCode::DropoutMask));
        if (executor().device().fp64)
            QVERIFY(executor().fellBackOps().empty());
    }

    // An index out of range is invalid_input with the reference's message (the first bad index).
    void indexOutOfRangeIsInvalidInput() {
        QString problem;
        auto single =
            singleNodeGraph(OpCode::IndexSelect, {{DType::F32, {4, 3}}, {DType::I64, {5}}},
                            {{"dim", std::int64_t{0}}}, problem);
        QVERIFY(single.has_value());
        Tensor x = Tensor::allocate(DType::F32, {4, 3}).value();
        std::fill(x.values<float>().begin(), x.values<float>().end(), 1.0f);
        for (std::int64_t bad : {std::int64_t{4}, std::int64_t{-1}}) {
            Tensor index = Tensor::allocate(DType::I64, {5}).value();
            const std::int64_t values[] = {0, 3, bad, 7, 1};
            std::copy(std::begin(values), std::end(values), index.values<std::int64_t>().begin());
            const std::vector<Tensor> inputs{x, index};
            auto want = goblin::reference::runGraph(single->graph, single->plan, inputs);
            auto got = executor().run(single->graph, single->plan, inputs);
            QVERIFY(!want.has_value() && !got.has_value());
            QCOMPARE(got.error().code, ErrorCode::InvalidInput);
            QCOMPARE(got.error().message, want.error().message);
        }
    }

    // As on a device without fp64, with add and matmul forced to the CPU: f64 and the forced ops
    // run on the reference (and are reported), f32 transcendentals come from the device's builtins
    // and stay within tolerance.
    void fallbackAndNoFp64PathsStayCorrect() {
        goblin::compute::OpenClGraphOptions options;
        options.cpuOps = {OpCode::Add, OpCode::Matmul};
        options.ignoreFp64 = true;
        auto limited = OpenClGraphExecutor::create(0, options);
        QVERIFY(limited.has_value());
        g_platformMath = true;
        int runs = 0;
        QStringList failures;
        const bool ran = checkEveryOp(*limited, runs, failures);
        g_platformMath = false;
        QVERIFY(ran);
        QVERIFY2(failures.isEmpty(), qPrintable(failures.join("\n")));
        const auto fellBack = limited->fellBackOps();
        for (OpCode op : {OpCode::Add, OpCode::Matmul, OpCode::Exp, OpCode::Sum, OpCode::Cast})
            QVERIFY2(std::find(fellBack.begin(), fellBack.end(), op) != fellBack.end(),
                     opInfo(op).name.data());
    }

    void integerDivisionByZeroIsInvalidInput() {
        for (OpCode op : {OpCode::FloorDivide, OpCode::Remainder}) {
            QString problem;
            auto single = singleNodeGraph(op, {{DType::I64, {4}}, {DType::I64, {4}}}, {}, problem);
            QVERIFY(single.has_value());
            Tensor a = Tensor::allocate(DType::I64, {4}).value();
            Tensor b = Tensor::allocate(DType::I64, {4}).value();
            for (std::int64_t i = 0; i < 4; ++i) {
                a.values<std::int64_t>()[static_cast<std::size_t>(i)] = i - 2;
                b.values<std::int64_t>()[static_cast<std::size_t>(i)] = i == 2 ? 0 : i + 1;
            }
            const std::vector<Tensor> inputs{a, b};
            auto want = goblin::reference::runGraph(single->graph, single->plan, inputs);
            auto got = executor().run(single->graph, single->plan, inputs);
            QVERIFY(!want.has_value() && !got.has_value());
            QCOMPARE(got.error().code, ErrorCode::InvalidInput);
            QCOMPARE(got.error().message, want.error().message);
        }
    }

    void wrongInputsAreRefusedLikeTheReference() {
        QString problem;
        auto single = singleNodeGraph(OpCode::Neg, {{DType::F32, {3}}}, {}, problem);
        QVERIFY(single.has_value());
        auto none = executor().run(single->graph, single->plan, {});
        QVERIFY(!none.has_value());
        QCOMPARE(none.error().code, ErrorCode::InvalidInput);
        const std::vector<Tensor> wrong{Tensor::allocate(DType::F32, {4}).value()};
        auto mismatched = executor().run(single->graph, single->plan, wrong);
        QVERIFY(!mismatched.has_value());
        QCOMPARE(mismatched.error().code, ErrorCode::ShapeMismatch);
    }

    // A chain whose intermediates are freed as it goes, reused values, and a constant.
    void chainedGraphMatchesTheReference() {
        graph::Graph g;
        g.inputs.push_back({0, {DType::F32, {8, 16}}});
        g.inputs.push_back({1, {DType::F32, {16, 4}}});
        Tensor bias = Tensor::allocate(DType::F32, {4}).value();
        for (std::size_t i = 0; i < 4; ++i)
            bias.values<float>()[i] = 0.25f * static_cast<float>(i);
        g.constants.push_back({2, bias});
        g.nodes.push_back({3, OpCode::Matmul, {0, 1}, {}});
        g.nodes.push_back({4, OpCode::Add, {3, 2}, {}});
        g.nodes.push_back({5, OpCode::Relu, {4}, {}});
        g.nodes.push_back({6, OpCode::Mul, {5, 5}, {}});
        g.nodes.push_back({7, OpCode::Sum, {6}, {{"dims", IntList{1}}}});
        g.nodes.push_back({8, OpCode::Permute, {5}, {{"dims", IntList{1, 0}}}});
        g.outputs = {7, 8, 5};
        auto plan = graph::validateGraph(g);
        QVERIFY2(plan.has_value(), plan ? "" : plan.error().describe().c_str());
        std::mt19937_64 engine(7);
        const std::vector<Tensor> inputs{randomTensor(DType::F32, {8, 16}, engine, false),
                                         randomTensor(DType::F32, {16, 4}, engine, false)};
        auto want = goblin::reference::runGraph(g, *plan, inputs);
        auto got = executor().run(g, *plan, inputs);
        QVERIFY(want.has_value() && got.has_value());
        // Programs are cached: running the graph again builds nothing.
        const std::size_t builds = executor().programBuilds();
        QVERIFY(executor().run(g, *plan, inputs).has_value());
        QCOMPARE(executor().programBuilds(), builds);
        for (std::size_t i = 0; i < want->size(); ++i)
            QVERIFY2(compareTensors(OpCode::Add, inputs, (*want)[i], (*got)[i]).isEmpty(),
                     qPrintable(QString::number(i)));
    }

    void sharedGraphVectorsRunOnOpenCl() {
        const std::string dir = std::string(GOBLIN_SOURCE_DIR) + "/tests/vectors/graphs/";
        const json::value manifest = readJson(dir + "manifest.json");
        for (const auto& name : manifest.at("vectors").as_array()) {
            const json::value vector = readJson(dir + std::string(name.as_string()));
            auto decoded = graph::decodeGraph(json::serialize(vector.at("graph")));
            QVERIFY2(decoded.has_value(), decoded ? "" : decoded.error().describe().c_str());
            auto plan = graph::validateGraph(*decoded);
            QVERIFY2(plan.has_value(), plan ? "" : plan.error().describe().c_str());
            std::vector<Tensor> inputs;
            for (const auto& input : vector.at("inputs").as_array())
                inputs.push_back(tensorOf(input));
            auto got = executor().run(*decoded, *plan, inputs);
            if (const auto* error = vector.as_object().if_contains("error")) {
                QVERIFY2(!got.has_value(), name.as_string().c_str());
                QCOMPARE(goblin::wireName(got.error().code), std::string_view(error->as_string()));
                continue;
            }
            QVERIFY2(got.has_value(), got ? "" : got.error().describe().c_str());
            const auto& expected = vector.at("expected").as_array();
            QCOMPARE(got->size(), expected.size());
            for (std::size_t i = 0; i < expected.size(); ++i) {
                const Tensor want = tensorOf(expected[i]);
                const QString mismatch =
                    closeTo(want, (*got)[i], expected[i].at("rtol").to_number<double>(),
                            expected[i].at("atol").to_number<double>());
                QVERIFY2(mismatch.isEmpty(),
                         qPrintable(QString::fromUtf8(name.as_string().c_str()) + ": " + mismatch));
            }
        }
    }
};

QTEST_APPLESS_MAIN(TestOpenClGraphExecutor)
#include "test_opencl_graph_executor.moc"
