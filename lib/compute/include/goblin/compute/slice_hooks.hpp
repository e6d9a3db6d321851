// What a backend that cuts one product into kernels of its own calls back between them, so a
// caller can pause (the volunteer's throttle waits there), keep a duty cycle, report progress or
// give up. Plain struct; the hook runs on the thread that called the backend.
#pragma once

#include <functional>

namespace goblin::compute {

struct SliceHooks {
    // After each slice: `busySeconds` it computed for and the `fraction` of the product done
    // (0 < fraction ≤ 1, exactly 1 after the last). Returning false stops the product; the backend
    // then returns an Internal error that the caller, who asked to stop, ignores.
    std::function<bool(double busySeconds, double fraction)> betweenSlices;
};

} // namespace goblin::compute
