// Builds the backend the volunteer computes with from `--devices`: the CPU (Eigen) always, and the
// first OpenCL device named, behind a BackendChooser. Runs once on the main thread at start-up,
// before any other OpenCL call (it points the driver's program cache at the volunteer's folder).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/json/array.hpp>

#include "goblin/compute/backend.hpp"

namespace goblin::volunteer {

struct DeviceSetupOptions {
    std::string devices = "cpu";     // the --devices text
    int cpuThreads = 0;              // 0: all cores
    std::int64_t memoryBytes = 0;    // what the CPU lends
    std::filesystem::path cacheDir;  // OpenCL program caches go under <cacheDir>/opencl
    std::filesystem::path configDir; // where --calibrate stored CLBlast parameters
    double sliceSeconds = 0.5;       // longest GPU kernel
};

struct DeviceSetup {
    std::unique_ptr<compute::Backend> backend;
    boost::json::array devices;     // capabilities.devices of the hello
    std::optional<int> graphDevice; // the OpenCL device opened, which also runs graph tasks
};

// InvalidInput for a malformed --devices; an OpenCL device that cannot be opened is logged and
// left out (the volunteer still computes on the CPU).
[[nodiscard]] Expected<DeviceSetup>
setUpDevices(const DeviceSetupOptions& options, const std::function<void(const std::string&)>& log);

// `--calibrate`: searches CLBlast GEMM parameters on the OpenCL devices --devices names (all of
// them when it names none) for about `seconds` per device and dtype, printing progress, and stores
// the fastest in the config folder for later runs. Returns the process exit status.
int calibrateDevices(const DeviceSetupOptions& options, double seconds,
                     const std::function<void(const std::string&)>& log);

// $XDG_CACHE_HOME/goblin-volunteer, else ~/.cache/goblin-volunteer.
std::filesystem::path defaultCacheDir();

} // namespace goblin::volunteer
