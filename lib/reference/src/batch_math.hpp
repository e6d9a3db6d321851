// The commonest transcendental ops of goblin_math.h over whole arrays, in loops the compiler
// vectorises: the same double operations in the same order as the scalar functions, so every
// element has the bits the scalar function gives (tests/reference/test_batch_math.cpp compares
// them), only faster. An element outside the ordinary range (NaN, ±inf, huge, some tiny values)
// is computed by the scalar function itself.
#pragma once

#include <cstddef>

namespace goblin::reference::detail {

enum class BatchOp { Exp, Erf, Tanh, Sigmoid, Gelu, GeluTanh };

// out[i] = op(in[i]) for i < count, bit for bit gm_<op>_f32 / gm_<op>_f64 (in and out may be the
// same array).
void batchUnary(BatchOp op, const float* in, float* out, std::size_t count);
void batchUnary(BatchOp op, const double* in, double* out, std::size_t count);
// Where the processor has AVX-512 (core::avx512Present()), with its 64-byte vectors: the same
// bits, faster.

} // namespace goblin::reference::detail
