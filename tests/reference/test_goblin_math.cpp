// Accuracy of kernels/goblin_math.h (the scalar math the CPU reference and the OpenCL kernels
// share) against a long-double recomputation, on many random inputs and the edge values: every
// function must stay inside its op's ULP budget in the catalog (op_catalog.cpp).
#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "goblin/core/ops/op_catalog.hpp"
#include "goblin_math.h"

using namespace goblin::core;
using namespace goblin::core::ops;
namespace gm = goblin::reference::math;

namespace {

struct Worst {
    double ratio = 0; // |error| / budget, must stay <= 1
    double ulps = 0;
    double at = 0;
};

// Every input: the function's value against `truth` (long double), in units of the op's budget.
template <class T, class F, class Truth>
Worst measure(OpCode op, const std::vector<T>& inputs, F f, Truth truth) {
    Worst worst;
    const DType dtype = std::is_same_v<T, float> ? DType::F32 : DType::F64;
    for (T x : inputs) {
        const T got = f(x);
        const long double want = truth(static_cast<long double>(x));
        const T rounded = static_cast<T>(want);
        if (std::isnan(static_cast<double>(want)) || std::isinf(static_cast<double>(rounded))) {
            if (!(std::isnan(got) == std::isnan(rounded)) || (!std::isnan(got) && got != rounded)) {
                worst.ratio = INFINITY;
                worst.at = static_cast<double>(x);
            }
            continue;
        }
        const double error = static_cast<double>(std::fabs(static_cast<long double>(got) - want));
        // Below the normal range no relative bound can hold: one subnormal step is allowed there.
        const double bound =
            std::max(toleranceBound(opInfo(op).tolerance, dtype, static_cast<double>(want),
                                    std::fabs(static_cast<double>(x)), 1),
                     static_cast<double>(std::numeric_limits<T>::denorm_min()));
        const double ratio = error == 0 ? 0 : bound == 0 ? INFINITY : error / bound;
        const double ulp = static_cast<double>(
            std::nextafter(std::fabs(rounded), std::numeric_limits<T>::infinity()) -
            std::fabs(rounded));
        if (ratio > worst.ratio)
            worst = {ratio, ulp > 0 ? error / ulp : 0, static_cast<double>(x)};
    }
    return worst;
}

template <class T> std::vector<T> inputs(double low, double high, int count, std::uint64_t seed) {
    std::mt19937_64 engine(seed);
    std::uniform_real_distribution<double> uniform(low, high);
    std::vector<T> values;
    for (int i = 0; i < count; ++i)
        values.push_back(static_cast<T>(uniform(engine)));
    // Edges: zeros, tiny, the interval boundaries of the implementations, huge, non-finite.
    for (double edge : {0.0,    -0.0,   1e-300, -1e-300, 1e-30,
                        1e-8,   -1e-8,  0.25,   0.5,     0.75,
                        1.0,    3.25,   6.0,    22.0,    0.34657359027997264,
                        709.78, -745.0, 88.7,   -103.9,  1e300,
                        -1e300})
        values.push_back(static_cast<T>(edge));
    values.push_back(std::numeric_limits<T>::infinity());
    values.push_back(-std::numeric_limits<T>::infinity());
    values.push_back(std::numeric_limits<T>::quiet_NaN());
    values.push_back(std::numeric_limits<T>::denorm_min());
    return values;
}

template <class T> std::vector<T> positiveInputs(int count, std::uint64_t seed) {
    std::mt19937_64 engine(seed);
    std::uniform_real_distribution<double> exponent(std::is_same_v<T, float> ? -100 : -740,
                                                    std::is_same_v<T, float> ? 88 : 709);
    std::uniform_real_distribution<double> nearOne(0.5, 2.0);
    std::vector<T> values;
    for (int i = 0; i < count; ++i) {
        values.push_back(static_cast<T>(std::exp(exponent(engine))));
        values.push_back(static_cast<T>(nearOne(engine)));
    }
    for (double edge :
         {0.0, 1.0, 1.0 + 1e-15, 1.0 - 1e-15, 0.7071067811865476, 1.4142135623730951, 2.0, -1.0})
        values.push_back(static_cast<T>(edge));
    values.push_back(std::numeric_limits<T>::denorm_min());
    values.push_back(std::numeric_limits<T>::max());
    values.push_back(std::numeric_limits<T>::infinity());
    return values;
}

long double sigmoidTruth(long double x) {
    return 1.0L / (1.0L + std::exp(-x));
}
long double geluTruth(long double x) {
    return 0.5L * x * (1.0L + std::erf(x / std::sqrt(2.0L)));
}
long double geluTanhTruth(long double x) {
    return 0.5L * x * (1.0L + std::tanh(0.79788456080286535588L * (x + 0.044715L * x * x * x)));
}

#define CHECK_WORST(name, worst)                                                                   \
    do {                                                                                           \
        qInfo("%-12s worst %.3f of the budget (%.2f ulp) at %.17g", name, (worst).ratio,           \
              (worst).ulps, (worst).at);                                                           \
        QVERIFY2((worst).ratio <= 1.0, name);                                                      \
    } while (false)

} // namespace

class TestGoblinMath : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void f64WithinBudgets() {
        const auto wide = inputs<double>(-745, 710, 20000, 1);
        const auto unit = inputs<double>(-4, 4, 40000, 2);
        CHECK_WORST("exp f64", measure<double>(OpCode::Exp, wide, gm::gm_exp_f64,
                                               [](long double x) { return std::exp(x); }));
        CHECK_WORST("exp f64", measure<double>(OpCode::Exp, unit, gm::gm_exp_f64,
                                               [](long double x) { return std::exp(x); }));
        CHECK_WORST("expm1 f64", measure<double>(OpCode::Exp, unit, gm::gm_expm1_f64,
                                                 [](long double x) { return std::expm1(x); }));
        CHECK_WORST("log f64",
                    measure<double>(OpCode::Log, positiveInputs<double>(20000, 3), gm::gm_log_f64,
                                    [](long double x) { return std::log(x); }));
        CHECK_WORST("tanh f64", measure<double>(OpCode::Tanh, unit, gm::gm_tanh_f64,
                                                [](long double x) { return std::tanh(x); }));
        CHECK_WORST("erf f64", measure<double>(OpCode::Erf, unit, gm::gm_erf_f64,
                                               [](long double x) { return std::erf(x); }));
        CHECK_WORST("sigmoid f64",
                    measure<double>(OpCode::Sigmoid, unit, gm::gm_sigmoid_f64, sigmoidTruth));
        CHECK_WORST("lgamma f64", measure<double>(OpCode::Lgamma, inputs<double>(-12, 12, 40000, 7),
                                                  gm::gm_lgamma_f64,
                                                  [](long double x) { return std::lgamma(x); }));
        CHECK_WORST("lgamma f64", measure<double>(OpCode::Lgamma, positiveInputs<double>(20000, 8),
                                                  gm::gm_lgamma_f64,
                                                  [](long double x) { return std::lgamma(x); }));
        CHECK_WORST("gelu f64", measure<double>(
                                    OpCode::Gelu, unit,
                                    [](double x) { return gm::gm_gelu_f64(x, 0); }, geluTruth));
        CHECK_WORST(
            "gelu-tanh f64",
            measure<double>(
                OpCode::Gelu, unit, [](double x) { return gm::gm_gelu_f64(x, 1); }, geluTanhTruth));
    }

    // pow over bases from 1e-300 to 1e300 (and negative bases with integer exponents).
    void powWithinBudget() {
        std::mt19937_64 engine(9);
        std::uniform_real_distribution<double> logBase(-690, 690);
        std::uniform_real_distribution<double> exponent(-40, 40);
        std::uniform_int_distribution<int> integer(-60, 60);
        double worst64 = 0, worst32 = 0;
        for (int i = 0; i < 40000; ++i) {
            double x = std::exp(logBase(engine) / (i % 3 == 0 ? 1 : 30));
            double y = i % 5 == 0 ? integer(engine) : exponent(engine);
            if (i % 7 == 0)
                x = -x, y = integer(engine);
            const long double want =
                std::pow(static_cast<long double>(x), static_cast<long double>(y));
            const auto ratio = [&](double got, DType dtype, double tiny) {
                if (std::isinf(static_cast<double>(want)) || std::isinf(got))
                    return std::isinf(got) == std::isinf(static_cast<double>(want)) ? 0.0
                                                                                    : INFINITY;
                const double bound = std::max(toleranceBound(opInfo(OpCode::Pow).tolerance, dtype,
                                                             static_cast<double>(want), 0, 1),
                                              tiny);
                return static_cast<double>(std::fabs(static_cast<long double>(got) - want)) / bound;
            };
            worst64 = std::max(worst64, ratio(gm::gm_pow_f64(x, y), DType::F64, 4.9e-324));
            const float xf = static_cast<float>(x), yf = static_cast<float>(y);
            const long double wantF =
                std::pow(static_cast<long double>(xf), static_cast<long double>(yf));
            if (std::isfinite(static_cast<double>(wantF)) &&
                std::fabs(static_cast<double>(wantF)) < 3e38) {
                const double bound =
                    std::max(toleranceBound(opInfo(OpCode::Pow).tolerance, DType::F32,
                                            static_cast<double>(wantF), 0, 1),
                             1.4e-45);
                worst32 = std::max(worst32,
                                   static_cast<double>(std::fabs(
                                       static_cast<long double>(gm::gm_pow_f32(xf, yf)) - wantF)) /
                                       bound);
            }
        }
        qInfo("pow f64 worst %.3f of the budget, f32 %.3f", worst64, worst32);
        QVERIFY(worst64 <= 1.0 && worst32 <= 1.0);
        // C's special cases.
        QCOMPARE(gm::gm_pow_f64(std::nan(""), 0.0), 1.0);
        QCOMPARE(gm::gm_pow_f64(1.0, std::nan("")), 1.0);
        QVERIFY(std::isnan(gm::gm_pow_f64(-8.0, 1.0 / 3.0)));
        QCOMPARE(gm::gm_pow_f64(-2.0, 3.0), -8.0);
        QCOMPARE(gm::gm_pow_f64(-0.0, -1.0), -INFINITY);
        QVERIFY(std::signbit(gm::gm_pow_f64(-0.0, 3.0)));
        QCOMPARE(gm::gm_pow_f64(-1.0, INFINITY), 1.0);
        QCOMPARE(gm::gm_pow_f64(0.5, -INFINITY), INFINITY);
        QCOMPARE(gm::gm_pow_f64(-INFINITY, -3.0), -0.0);
        QCOMPARE(gm::gm_lgamma_f64(-3.0), INFINITY);
        QCOMPARE(gm::gm_lgamma_f64(0.0), INFINITY);
        QCOMPARE(gm::gm_lgamma_f64(1.0), 0.0);
        QCOMPARE(gm::gm_lgamma_f64(2.0), 0.0);
    }

    void f32WithinBudgets() {
        const auto wide = inputs<float>(-104, 89, 20000, 4);
        const auto unit = inputs<float>(-6, 6, 40000, 5);
        CHECK_WORST("exp f32", measure<float>(OpCode::Exp, wide, gm::gm_exp_f32,
                                              [](long double x) { return std::exp(x); }));
        CHECK_WORST("log f32",
                    measure<float>(OpCode::Log, positiveInputs<float>(20000, 6), gm::gm_log_f32,
                                   [](long double x) { return std::log(x); }));
        CHECK_WORST("tanh f32", measure<float>(OpCode::Tanh, unit, gm::gm_tanh_f32,
                                               [](long double x) { return std::tanh(x); }));
        CHECK_WORST("erf f32", measure<float>(OpCode::Erf, unit, gm::gm_erf_f32,
                                              [](long double x) { return std::erf(x); }));
        // Below −88.7, exp(−x) overflows f32 and sigmoid is 0, as in PyTorch (checked in
        // edgeValues).
        CHECK_WORST("sigmoid f32",
                    measure<float>(OpCode::Sigmoid, inputs<float>(-88, 89, 20000, 10),
                                   gm::gm_sigmoid_f32, sigmoidTruth));
        CHECK_WORST("lgamma f32", measure<float>(OpCode::Lgamma, unit, gm::gm_lgamma_f32,
                                                 [](long double x) { return std::lgamma(x); }));
        CHECK_WORST("gelu f32", measure<float>(
                                    OpCode::Gelu, unit,
                                    [](float x) { return gm::gm_gelu_f32(x, 0); }, geluTruth));
        CHECK_WORST(
            "gelu-tanh f32",
            measure<float>(
                OpCode::Gelu, unit, [](float x) { return gm::gm_gelu_f32(x, 1); }, geluTanhTruth));
    }

    // The non-finite and signed-zero answers the catalog promises.
    void edgeValues() {
        QCOMPARE(gm::gm_exp_f64(-INFINITY), 0.0);
        QCOMPARE(gm::gm_exp_f64(INFINITY), INFINITY);
        QCOMPARE(gm::gm_log_f64(0.0), -INFINITY);
        QVERIFY(std::isnan(gm::gm_log_f64(-1.0)));
        QCOMPARE(gm::gm_erf_f64(-INFINITY), -1.0);
        QCOMPARE(gm::gm_tanh_f64(-INFINITY), -1.0);
        QVERIFY(std::signbit(gm::gm_tanh_f64(-0.0)) && std::signbit(gm::gm_erf_f64(-0.0)));
        QVERIFY(std::signbit(gm::gm_expm1_f64(-0.0)));
        QCOMPARE(gm::gm_sigmoid_f32(-INFINITY), 0.0f);
        QCOMPARE(gm::gm_sigmoid_f32(INFINITY), 1.0f);
        QCOMPARE(gm::gm_sigmoid_f32(-95.0f), 0.0f); // torch.sigmoid(f32 −95) is 0 too
        // gelu(−inf) = −inf·0 = NaN in the formula the catalog fixes (as the CPU reference always
        // did).
        QVERIFY(std::isnan(gm::gm_gelu_f32(-INFINITY, 0)));
    }

    // The host's x·2^e (a multiplication where 2^e is normal) returns std::ldexp's bits for every
    // exponent the functions use and beyond, on normal, subnormal, huge, zero and non-finite x:
    // results that round into the subnormals, overflow or stay exact.
    void ldexpIsTheLibrarys() {
        std::mt19937_64 random(7);
        std::vector<double> xs{0.0,
                               -0.0,
                               1.0,
                               -1.5,
                               INFINITY,
                               -INFINITY,
                               std::nan(""),
                               std::numeric_limits<double>::denorm_min(),
                               std::numeric_limits<double>::min(),
                               std::numeric_limits<double>::max(),
                               0.7071067811865476,
                               1.4142135623730951};
        for (int i = 0; i < 2000; ++i) {
            const auto bits = random();
            double x;
            std::memcpy(&x, &bits, sizeof x);
            xs.push_back(x); // every exponent and mantissa, subnormals included
        }
        int compared = 0;
        for (double x : xs)
            for (int e = -1100; e <= 1100; ++e) {
                const double want = std::ldexp(x, e);
                const double got = gm::gm_ldexp_host(x, e);
                if (std::isnan(want)) {
                    QVERIFY2(std::isnan(got), qPrintable(QString("x=%1 e=%2").arg(x).arg(e)));
                    continue;
                }
                QVERIFY2(
                    std::memcmp(&want, &got, sizeof want) == 0,
                    qPrintable(QString("x=%1 e=%2: %3 vs %4").arg(x).arg(e).arg(got).arg(want)));
                ++compared;
            }
        QVERIFY(compared > 4'000'000);
    }
};

QTEST_APPLESS_MAIN(TestGoblinMath)
#include "test_goblin_math.moc"
