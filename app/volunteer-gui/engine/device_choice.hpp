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

// Whether an OpenCL CPU device (PoCL's "cpu-…", Intel's CPU runtime) counts among the GPUs. The
// desktop app hides them: the CPU already computes through Eigen on the same cores, so lending it
// "as a GPU" would run the same cores twice. Tests and CI, which have only PoCL, offer it.
enum class OpenClCpuDevices { Hide, Offer };

bool isOpenClCpuDevice(const compute::OpenClDeviceInfo& device);
// The devices to offer as GPUs, in listed order (their index, hence "gpu<index>", unchanged).
std::vector<compute::OpenClDeviceInfo>
gpuDevices(const std::vector<compute::OpenClDeviceInfo>& devices, OpenClCpuDevices cpuDevices);

struct CpuDescription {
    int threads = 0;
    std::int64_t memoryBytes = 0;
    std::string blasKernel; // OpenBLAS's kernel, shown in the table when known
};

// The table `--list-devices` prints: the CPU backend, then every OpenCL device (or why none),
// and a note under it naming the OpenCL devices that are CPUs, not GPUs.
std::string formatDeviceTable(const CpuDescription& cpu,
                              const Expected<std::vector<compute::OpenClDeviceInfo>>& devices);

// What `--list-devices-tsv` prints, for the desktop app, which lists the devices in a child
// process so the OpenCL driver (PoCL brings LLVM, ~55 MB) never loads into its own: "ok", then one
// line per device "index<TAB>type<TAB>name<TAB>vendor"; or "error<TAB>message".
std::string formatDeviceLines(const Expected<std::vector<compute::OpenClDeviceInfo>>& devices);
// Reads those lines back (index, type, name and vendor filled in); InvalidInput when malformed.
[[nodiscard]] Expected<std::vector<compute::OpenClDeviceInfo>>
parseDeviceLines(const std::string& text);

// capabilities.devices of the hello: the CPU, and the OpenCL device in use (if any).
boost::json::array describeDevices(const CpuDescription& cpu,
                                   const compute::OpenClDeviceInfo* device);

} // namespace goblin::volunteer
