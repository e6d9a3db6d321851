// Runs one matmul tile on a backend in slices, short enough that a pause takes effect within a
// fraction of a second and a duty limit is a smooth cycle rather than a 1-second on/off. A backend
// that slices internally (OpenCL) gets the tile in one call and the gate through its SliceHooks;
// others (the CPU) get row slices of about kSliceSeconds each. Compute thread only; the gate is
// the one shared object.
#pragma once

#include <functional>
#include <optional>

#include "compute_gate.hpp"
#include "goblin/compute/backend.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::volunteer {

inline constexpr double kSliceSeconds = 0.05;
// At full duty a slice only bounds how long a pause waits, so slices are longer: each row slice
// repacks all of B (a 4096-deep tile's B is 32 MiB), and at 50 ms that cost a tenth of the tile.
inline constexpr double kFullDutySliceSeconds = 0.25;

// Remembers the backend's measured speed between tiles, so the first slice of a tile is already
// about the right size. Owned by the compute thread.
struct SliceTuning {
    double flopsPerSecond = 2e9;         // a cautious first guess, corrected after every slice
    double sliceSeconds = kSliceSeconds; // the time one slice should take under a duty limit
                                         // (0: one row each, whatever the duty)
    int appliedThreads = 0;
};

struct SlicedRun {
    std::function<void(int threads)> applyThreads; // called when the plan's thread count changes
    std::function<void(double fraction)> progress; // after every slice, 0 < fraction ≤ 1
    std::function<bool()> cancelled; // checked after every slice: true abandons the tile
};

struct SlicedResult {
    core::Tensor product;
    double busySeconds = 0; // time spent computing, rests and pauses excluded
};

// Empty when the gate shut down or the run was cancelled mid-tile (the result is abandoned); an
// error when the backend refused the inputs or failed.
std::optional<Expected<SlicedResult>> slicedMatmul(compute::Backend& backend, ComputeGate& gate,
                                                   SliceTuning& tuning, const core::Tensor& a,
                                                   const core::Tensor& b, const SlicedRun& hooks);

} // namespace goblin::volunteer
