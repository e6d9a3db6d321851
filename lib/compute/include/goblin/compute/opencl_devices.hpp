// OpenCL device discovery: every platform's devices in one flat list, indexed as the volunteer's
// "gpu0", "gpu1", … Free functions; call them from one thread at a time (the OpenCL ICD loader is
// thread-safe, setenv in prepareOpenClCache is not).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "goblin/core/error.hpp"

namespace goblin::compute {

struct OpenClDeviceInfo {
    int index = 0; // position in listOpenClDevices(): "gpu<index>"
    std::string platform;
    std::string name;
    std::string vendor;
    std::string driverVersion;
    std::string deviceVersion; // "OpenCL 3.0 …"
    std::string type;          // "gpu", "cpu", "accelerator", "other"
    std::uint64_t globalMemoryBytes = 0;
    std::uint64_t maxAllocBytes = 0;
    std::uint32_t computeUnits = 0;
    std::uint64_t maxWorkGroupSize = 0;
    std::uint64_t localMemoryBytes = 0;
    bool fp64 = false;
    bool fp16 = false;
};

// Every device of every platform. An empty list (not an error) when no OpenCL platform is
// installed; an error only when the loader answers something unexpected.
[[nodiscard]] Expected<std::vector<OpenClDeviceInfo>> listOpenClDevices();

// Points driver program caches at `dir` (created if missing) before the first OpenCL call:
// POCL_CACHE_DIR for PoCL, unless the user already set it. Returns the folder in force.
[[nodiscard]] Expected<std::filesystem::path> prepareOpenClCache(const std::filesystem::path& dir);

} // namespace goblin::compute
