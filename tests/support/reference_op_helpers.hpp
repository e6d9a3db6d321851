// Shared helpers of the reference-op tests: build a tensor from values, run one op and read its
// values (a failing op ends the test with its message), or get the error code it fails with.
#pragma once

#include <QtTest/QtTest>

#include <random>
#include <vector>

#include "goblin/reference/graph_executor.hpp"

namespace reference_test {

using namespace goblin::core;
using namespace goblin::core::ops;

template <class T> Tensor make(DType dtype, Shape shape, std::vector<T> values) {
    Tensor tensor = Tensor::allocate(dtype, std::move(shape)).value();
    std::copy(values.begin(), values.end(), tensor.values<T>().begin());
    return tensor;
}

inline Tensor runChecked(OpCode op, std::vector<Tensor> args, const Attributes& attrs = {}) {
    auto out = goblin::reference::runOp(op, args, attrs);
    if (!out)
        qFatal("%s", out.error().message.c_str());
    return *out;
}

template <class T>
std::vector<T> run(OpCode op, std::vector<Tensor> args, const Attributes& attrs = {}) {
    const Tensor out = runChecked(op, std::move(args), attrs);
    return {out.values<T>().begin(), out.values<T>().end()};
}

inline goblin::ErrorCode failure(OpCode op, std::vector<Tensor> args,
                                 const Attributes& attrs = {}) {
    auto out = goblin::reference::runOp(op, args, attrs);
    return out ? goblin::ErrorCode::Internal : out.error().code;
}

// Normal(0, 1) values of dtype T, seeded.
template <class T> Tensor random(DType dtype, Shape shape, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal;
    Tensor tensor = Tensor::allocate(dtype, std::move(shape)).value();
    for (T& v : tensor.values<T>())
        v = static_cast<T>(normal(rng));
    return tensor;
}

} // namespace reference_test
