// Finds the OpenCL device behind an index of listOpenClDevices(). Private to the OpenCL backend;
// call from one thread at a time.
#pragma once

#include "cl_headers.hpp"
#include "goblin/compute/opencl_devices.hpp"

namespace goblin::compute::opencl {

struct FoundDevice {
    cl::Device device;
    OpenClDeviceInfo info;
};

[[nodiscard]] Expected<FoundDevice> findOpenClDevice(int index);

} // namespace goblin::compute::opencl
