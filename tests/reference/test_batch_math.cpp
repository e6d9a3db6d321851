// lib/reference's batched transcendentals (src/batch_math.cpp, compiled for AVX-512 too) against
// the scalar functions of kernels/goblin_math.h compiled here as the reference compiles them: every
// element must have the same bits (a NaN must stay a NaN), with AVX-512 and without, on a stride
// through every f32 bit pattern, values around each range boundary, random values at many scales,
// and through runOp.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "batch_math.hpp"
#include "goblin/core/cpu_clones.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "goblin_math.h"

using namespace goblin::reference::detail;
namespace gm = goblin::reference::math;

namespace {

template <class T> T scalar(BatchOp op, T x) {
    if constexpr (std::is_same_v<T, float>) {
        switch (op) {
        case BatchOp::Exp:
            return gm::gm_exp_f32(x);
        case BatchOp::Erf:
            return gm::gm_erf_f32(x);
        case BatchOp::Tanh:
            return gm::gm_tanh_f32(x);
        case BatchOp::Sigmoid:
            return gm::gm_sigmoid_f32(x);
        case BatchOp::Gelu:
            return gm::gm_gelu_f32(x, 0);
        default:
            return gm::gm_gelu_f32(x, 1);
        }
    } else {
        switch (op) {
        case BatchOp::Exp:
            return gm::gm_exp_f64(x);
        case BatchOp::Erf:
            return gm::gm_erf_f64(x);
        case BatchOp::Tanh:
            return gm::gm_tanh_f64(x);
        case BatchOp::Sigmoid:
            return gm::gm_sigmoid_f64(x);
        case BatchOp::Gelu:
            return gm::gm_gelu_f64(x, 0);
        default:
            return gm::gm_gelu_f64(x, 1);
        }
    }
}

constexpr BatchOp kOps[] = {BatchOp::Exp,     BatchOp::Erf,  BatchOp::Tanh,
                            BatchOp::Sigmoid, BatchOp::Gelu, BatchOp::GeluTanh};

template <class T> bool sameBits(T a, T b) {
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b); // a signalling NaN's payload is not promised
    return std::memcmp(&a, &b, sizeof a) == 0;
}

// The number of elements whose batched value differs from the scalar one (the first is reported).
template <class T> int mismatches(BatchOp op, const std::vector<T>& inputs) {
    std::vector<T> out(inputs.size());
    batchUnary(op, inputs.data(), out.data(), inputs.size());
    int count = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const T want = scalar(op, inputs[i]);
        if (sameBits(out[i], want))
            continue;
        if (count++ == 0)
            qWarning("op %d: x = %a gives %a, the scalar function %a", static_cast<int>(op),
                     static_cast<double>(inputs[i]), static_cast<double>(out[i]),
                     static_cast<double>(want));
    }
    return count;
}

// Values on both sides of every range boundary of the functions, and the special values.
template <class T> std::vector<T> boundaryValues() {
    const double edges[] = {0.0,
                            3.725290298461914e-09,
                            5.551115123125783e-17,
                            0.25,
                            3.25,
                            6.0,
                            18.0,
                            22.0,
                            38.0,
                            88.7,
                            103.9,
                            708.0,
                            709.0,
                            709.782712893384,
                            745.1332191019412,
                            1e300};
    std::vector<T> values;
    for (double edge : edges) {
        const T at = static_cast<T>(edge);
        for (T x :
             {at, std::nextafter(at, T(0)), std::nextafter(at, std::numeric_limits<T>::max())})
            for (T sign : {T(1), T(-1)})
                values.push_back(sign * x);
    }
    for (T x : {std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::denorm_min(),
                std::numeric_limits<T>::min(), std::numeric_limits<T>::max()})
        values.push_back(x);
    return values;
}

// Random values whose magnitudes spread over 2^-40 … 2^40 (both signs), an odd count so that the
// last elements take the scalar tail.
template <class T> std::vector<T> randomValues(std::uint64_t seed) {
    std::mt19937_64 engine(seed);
    std::uniform_int_distribution<int> exponent(-40, 40);
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    std::vector<T> values(200001);
    for (T& value : values)
        value = static_cast<T>(std::ldexp(unit(engine), exponent(engine)));
    return values;
}

} // namespace

class TestBatchMath : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Each test runs with AVX-512 and without (on a processor without it, both runs take the
    // library's own path; the same bits are asserted all the same); it is allowed again after.
    void cleanup() { goblin::core::avx512Allowed() = true; }

    void f32StrideThroughEveryBitPattern() {
        std::vector<float> values;
        for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << 32); bits += 65521) {
            const auto pattern = static_cast<std::uint32_t>(bits);
            float value;
            std::memcpy(&value, &pattern, sizeof value);
            values.push_back(value);
        }
        for (bool wide : {false, true}) {
            goblin::core::avx512Allowed() = wide;
            for (BatchOp op : kOps)
                QCOMPARE(mismatches(op, values), 0);
        }
    }

    void boundariesAndSpecialValues() {
        for (bool wide : {false, true}) {
            goblin::core::avx512Allowed() = wide;
            for (BatchOp op : kOps) {
                QCOMPARE(mismatches(op, boundaryValues<float>()), 0);
                QCOMPARE(mismatches(op, boundaryValues<double>()), 0);
            }
        }
    }

    void randomValuesAtManyScales() {
        for (bool wide : {false, true}) {
            goblin::core::avx512Allowed() = wide;
            for (BatchOp op : kOps) {
                QCOMPARE(mismatches(op, randomValues<float>(1)), 0);
                QCOMPARE(mismatches(op, randomValues<double>(2)), 0);
            }
        }
    }

    // The same array as input and output: values at every scale, and small values whose chunks are
    // wholly ordinary but for one −inf and one NaN (written in place unless a chunk holds those).
    void inPlace() {
        std::vector<float> small(5000);
        for (std::size_t i = 0; i < small.size(); ++i)
            small[i] = std::sin(static_cast<float>(i));
        small[1500] = -std::numeric_limits<float>::infinity();
        small[3000] = std::numeric_limits<float>::quiet_NaN();
        for (const std::vector<float>& original : {randomValues<float>(3), small})
            for (BatchOp op : kOps) {
                std::vector<float> values = original;
                batchUnary(op, values.data(), values.data(), values.size());
                for (std::size_t i = 0; i < values.size(); ++i)
                    QVERIFY(sameBits(values[i], scalar(op, original[i])));
            }
    }

    // The reference executor's unary ops take the batched path and give the scalar bits.
    void runOpGivesTheScalarBits() {
        const std::vector<float> values = randomValues<float>(4);
        auto input = goblin::core::Tensor::allocate(goblin::core::DType::F32,
                                                    {static_cast<std::int64_t>(values.size())})
                         .value();
        std::copy(values.begin(), values.end(), input.values<float>().begin());
        const std::pair<goblin::core::ops::OpCode, BatchOp> ops[] = {
            {goblin::core::ops::OpCode::Exp, BatchOp::Exp},
            {goblin::core::ops::OpCode::Erf, BatchOp::Erf},
            {goblin::core::ops::OpCode::Gelu, BatchOp::Gelu}};
        for (const auto& [code, op] : ops) {
            auto out = goblin::reference::runOp(code, std::span(&input, 1), {});
            QVERIFY(out.has_value());
            const auto got = out->values<float>();
            for (std::size_t i = 0; i < values.size(); ++i)
                QVERIFY(sameBits(got[i], scalar(op, values[i])));
        }
    }
};

QTEST_APPLESS_MAIN(TestBatchMath)
#include "test_batch_math.moc"
