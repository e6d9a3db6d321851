// The compute plan an engine gets from a throttle decision, for the desktop app and the headless
// volunteer alike. A pure function; any thread.
#pragma once

#include <cstddef>
#include <optional>

#include "compute_gate.hpp"
#include "throttle_policy.hpp"

namespace goblin::volunteer {

// draining: "finish the current task, then pause" is under way. `gpu`: the index (into
// decision.gpus) of the OpenCL device the engines compute on, if any: its GPU-time limit then
// caps the duty too (the CPU takes only what the device refuses, so one duty serves both).
ComputePlan planFor(const ThrottleDecision& decision, bool draining,
                    std::optional<std::size_t> gpu = std::nullopt);

} // namespace goblin::volunteer
