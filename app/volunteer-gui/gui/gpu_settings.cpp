#include "gpu_settings.hpp"

#include <algorithm>

namespace goblin::volunteer {

std::vector<GpuLimit> matchGpuSettings(const std::vector<GpuLimit>& saved,
                                       const std::vector<ListedGpu>& listed) {
    std::vector<bool> used(saved.size(), false);
    auto take = [&](auto matches) -> const GpuLimit* {
        for (std::size_t i = 0; i < saved.size(); ++i)
            if (!used[i] && matches(saved[i])) {
                used[i] = true;
                return &saved[i];
            }
        return nullptr;
    };
    std::vector<GpuLimit> matched;
    for (const ListedGpu& device : listed) {
        const GpuLimit* found = take([&](const GpuLimit& gpu) {
            return !gpu.identity.empty() && gpu.identity == device.identity;
        });
        if (!found)
            found = take([&](const GpuLimit& gpu) {
                return gpu.identity.empty() && gpu.device == device.id;
            });
        GpuLimit gpu = found ? *found : GpuLimit{device.id, false, 100, {}}; // off until opted in
        gpu.device = device.id;
        gpu.identity = device.identity;
        matched.push_back(gpu);
    }
    for (std::size_t i = 0; i < saved.size(); ++i) {
        const bool taken = std::any_of(matched.begin(), matched.end(), [&](const GpuLimit& gpu) {
            return gpu.device == saved[i].device;
        });
        if (!used[i] && !taken)
            matched.push_back(saved[i]);
    }
    return matched;
}

} // namespace goblin::volunteer
