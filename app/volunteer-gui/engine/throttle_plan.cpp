#include "throttle_plan.hpp"

#include <algorithm>

namespace goblin::volunteer {

ComputePlan planFor(const ThrottleDecision& decision, bool draining,
                    std::optional<std::size_t> gpu) {
    int duty = decision.cpuDutyPercent;
    if (gpu && *gpu < decision.gpus.size() && decision.gpus[*gpu].enabled)
        duty = std::min(duty, decision.gpus[*gpu].dutyPercent);
    return ComputePlan{decision.run, draining, decision.cpuThreads, duty};
}

} // namespace goblin::volunteer
