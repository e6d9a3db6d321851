// Matches the saved per-GPU settings to the OpenCL devices listed now. A setting follows its
// device by identity (name and vendor), not by position, so a platform that lists devices in
// another order (a driver update, a new card) does not switch on the wrong GPU. Pure; any thread.
#pragma once

#include <string>
#include <vector>

#include "throttle_settings.hpp"

namespace goblin::volunteer {

struct ListedGpu {
    std::string id;       // "gpu0"
    std::string identity; // "<name> / <vendor>"
};

// One setting per listed device, in listed order: the saved one with the same identity (else, for
// settings saved without one, the same id), re-keyed to the device's id now; a device never seen
// gets a setting that is off. Saved settings of devices not listed now are kept after those, as
// long as their id is not taken.
std::vector<GpuLimit> matchGpuSettings(const std::vector<GpuLimit>& saved,
                                       const std::vector<ListedGpu>& listed);

} // namespace goblin::volunteer
