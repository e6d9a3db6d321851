// The volunteer's device settings: parses `--devices cpu,gpu0,…` and prints the device table of
// `--list-devices`. Plain functions; any thread.
#pragma once

#include <string>
#include <vector>

#include <boost/json/array.hpp>

#include "goblin/compute/opencl_devices.hpp"

namespace goblin::volunteer {

struct DeviceChoice {
    bool cpu = false;
    std::vector<int> gpus; // OpenCL device indexes, in the order given
};

// "cpu", "gpu0", "cpu,gpu1" … ; InvalidInput for anything else, duplicates or an empty list.
[[nodiscard]] Expected<DeviceChoice> parseDeviceChoice(const std::string& text);

struct CpuDescription {
    int threads = 0;
    std::int64_t memoryBytes = 0;
};

// The table `--list-devices` prints: the CPU backend, then every OpenCL device (or why none).
std::string formatDeviceTable(const CpuDescription& cpu,
                              const Expected<std::vector<compute::OpenClDeviceInfo>>& devices);

// capabilities.devices of the hello: the CPU, and the OpenCL device in use (if any).
boost::json::array describeDevices(const CpuDescription& cpu,
                                   const compute::OpenClDeviceInfo* device);

} // namespace goblin::volunteer
