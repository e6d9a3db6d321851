#include "goblin/compute/opencl_devices.hpp"

#include <cstdlib>
#include <system_error>

#include "cl_error.hpp"
#include "device_lookup.hpp"

namespace goblin::compute {
namespace {

constexpr cl_int kPlatformNotFound = -1001; // CL_PLATFORM_NOT_FOUND_KHR, from the ICD loader

// Trailing NULs are part of what some drivers return for string queries.
std::string trimmed(std::string text) {
    while (!text.empty() && (text.back() == '\0' || text.back() == ' '))
        text.pop_back();
    return text;
}

std::string deviceType(cl_device_type type) {
    if (type & CL_DEVICE_TYPE_GPU)
        return "gpu";
    if (type & CL_DEVICE_TYPE_CPU)
        return "cpu";
    if (type & CL_DEVICE_TYPE_ACCELERATOR)
        return "accelerator";
    return "other";
}

bool hasExtension(const std::string& extensions, std::string_view name) {
    for (std::size_t at = extensions.find(name); at != std::string::npos;
         at = extensions.find(name, at + 1)) {
        const std::size_t end = at + name.size();
        const bool startsWord = at == 0 || extensions[at - 1] == ' ';
        const bool endsWord = end == extensions.size() || extensions[end] == ' ';
        if (startsWord && endsWord)
            return true;
    }
    return false;
}

OpenClDeviceInfo describe(const cl::Platform& platform, const cl::Device& device, int index) {
    OpenClDeviceInfo info;
    info.index = index;
    info.platform = trimmed(platform.getInfo<CL_PLATFORM_NAME>());
    info.name = trimmed(device.getInfo<CL_DEVICE_NAME>());
    info.vendor = trimmed(device.getInfo<CL_DEVICE_VENDOR>());
    info.driverVersion = trimmed(device.getInfo<CL_DRIVER_VERSION>());
    info.deviceVersion = trimmed(device.getInfo<CL_DEVICE_VERSION>());
    info.type = deviceType(device.getInfo<CL_DEVICE_TYPE>());
    info.globalMemoryBytes = device.getInfo<CL_DEVICE_GLOBAL_MEM_SIZE>();
    info.maxAllocBytes = device.getInfo<CL_DEVICE_MAX_MEM_ALLOC_SIZE>();
    info.computeUnits = device.getInfo<CL_DEVICE_MAX_COMPUTE_UNITS>();
    info.maxWorkGroupSize = device.getInfo<CL_DEVICE_MAX_WORK_GROUP_SIZE>();
    info.localMemoryBytes = device.getInfo<CL_DEVICE_LOCAL_MEM_SIZE>();
    const std::string extensions = device.getInfo<CL_DEVICE_EXTENSIONS>();
    info.fp64 = hasExtension(extensions, "cl_khr_fp64") ||
                device.getInfo<CL_DEVICE_DOUBLE_FP_CONFIG>() != 0;
    info.fp16 = hasExtension(extensions, "cl_khr_fp16");
    return info;
}

// Walks every device of every platform in order, calling visit(platform, device, index) until it
// returns true. No platform at all is not an error.
template <class Visit> Expected<bool> forEachDevice(Visit&& visit) {
    std::vector<cl::Platform> platforms;
    if (const cl_int status = cl::Platform::get(&platforms); status != CL_SUCCESS) {
        if (status == kPlatformNotFound)
            return false;
        return tl::unexpected(opencl::clError(status, "clGetPlatformIDs"));
    }
    int index = 0;
    for (const auto& platform : platforms) {
        std::vector<cl::Device> devices;
        const cl_int status = platform.getDevices(CL_DEVICE_TYPE_ALL, &devices);
        // A platform without devices answers CL_DEVICE_NOT_FOUND: skip it, keep the others.
        if (status != CL_SUCCESS)
            continue;
        for (const auto& device : devices) {
            if (visit(platform, device, index++))
                return true;
        }
    }
    return false;
}

} // namespace

Expected<std::vector<OpenClDeviceInfo>> listOpenClDevices() {
    try {
        std::vector<OpenClDeviceInfo> list;
        auto walked =
            forEachDevice([&](const cl::Platform& platform, const cl::Device& device, int index) {
                list.push_back(describe(platform, device, index));
                return false;
            });
        if (!walked)
            return tl::unexpected(walked.error());
        return list;
    } catch (const std::exception& error) {
        return makeError(ErrorCode::Internal, std::string("opencl discovery: ") + error.what());
    }
}

Expected<std::filesystem::path> prepareOpenClCache(const std::filesystem::path& dir) {
    if (const char* set = std::getenv("POCL_CACHE_DIR"); set && *set)
        return std::filesystem::path(set);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        return makeError(ErrorCode::Internal, "cannot create the OpenCL cache folder " +
                                                  dir.string() + ": " + ec.message());
    ::setenv("POCL_CACHE_DIR", dir.c_str(), 0);
    return dir;
}

namespace opencl {

Expected<FoundDevice> findOpenClDevice(int index) {
    try {
        FoundDevice found;
        auto walked =
            forEachDevice([&](const cl::Platform& platform, const cl::Device& device, int at) {
                if (at != index)
                    return false;
                found = FoundDevice{device, describe(platform, device, at)};
                return true;
            });
        if (!walked)
            return tl::unexpected(walked.error());
        if (!*walked)
            return makeError(ErrorCode::NotFound,
                             "no OpenCL device gpu" + std::to_string(index) + " on this machine");
        return found;
    } catch (const std::exception& error) {
        return makeError(ErrorCode::Internal, std::string("opencl discovery: ") + error.what());
    }
}

} // namespace opencl
} // namespace goblin::compute
