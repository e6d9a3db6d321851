// Whether a run of floating-point values holds only finite ones (no NaN, no ±Inf), by the exponent
// bits in a branch-free loop that vectorises (with an AVX2 clone where the CPU has it). Pure; any
// thread.
#pragma once

#include <span>

namespace goblin::core {

bool allFinite(std::span<const float> values);
bool allFinite(std::span<const double> values);

} // namespace goblin::core
