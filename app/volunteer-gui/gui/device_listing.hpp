// Lists the OpenCL devices in a child process (`goblin-volunteer --list-devices-tsv`), so the
// desktop app never loads the OpenCL driver itself unless a GPU computes: PoCL alone brings LLVM
// (~55 MB resident). GUI thread, blocking (once at start, a fraction of a second).
#pragma once

#include <QString>

#include <vector>

#include "goblin/compute/opencl_devices.hpp"

namespace goblin::volunteer {

[[nodiscard]] Expected<std::vector<compute::OpenClDeviceInfo>>
listDevicesInChild(const QString& program);

} // namespace goblin::volunteer
