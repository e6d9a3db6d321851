#include "cl_error.hpp"

#include <string>

namespace goblin::compute::opencl {

std::string_view clStatusName(cl_int status) {
    switch (status) {
    case CL_SUCCESS:
        return "CL_SUCCESS";
    case CL_DEVICE_NOT_FOUND:
        return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE:
        return "CL_DEVICE_NOT_AVAILABLE";
    case CL_COMPILER_NOT_AVAILABLE:
        return "CL_COMPILER_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
        return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES:
        return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY:
        return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE:
        return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE:
        return "CL_INVALID_VALUE";
    case CL_INVALID_DEVICE:
        return "CL_INVALID_DEVICE";
    case CL_INVALID_CONTEXT:
        return "CL_INVALID_CONTEXT";
    case CL_INVALID_COMMAND_QUEUE:
        return "CL_INVALID_COMMAND_QUEUE";
    case CL_INVALID_MEM_OBJECT:
        return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_BINARY:
        return "CL_INVALID_BINARY";
    case CL_INVALID_BUILD_OPTIONS:
        return "CL_INVALID_BUILD_OPTIONS";
    case CL_INVALID_PROGRAM:
        return "CL_INVALID_PROGRAM";
    case CL_INVALID_PROGRAM_EXECUTABLE:
        return "CL_INVALID_PROGRAM_EXECUTABLE";
    case CL_INVALID_KERNEL_NAME:
        return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL_ARGS:
        return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_GROUP_SIZE:
        return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_BUFFER_SIZE:
        return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE:
        return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_OPERATION:
        return "CL_INVALID_OPERATION";
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
        return "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST";
    case -1001:
        return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
        return {};
    }
}

Error clError(cl_int status, std::string_view what) {
    std::string name(clStatusName(status));
    if (name.empty())
        name = "CL_ERROR";
    return Error{ErrorCode::Internal, "opencl: " + std::string(what) + ": " + name + " (" +
                                          std::to_string(status) + ")"};
}

Error clblastError(clblast::StatusCode status, std::string_view what) {
    const int code = static_cast<int>(status);
    if (status == clblast::StatusCode::kNoDoublePrecision)
        return Error{ErrorCode::UnsupportedDtype,
                     "clblast: " + std::string(what) + ": the device has no double precision"};
    // CLBlast reuses OpenCL's codes for OpenCL failures; name those the same way.
    const std::string_view clName = code > -1000 ? clStatusName(code) : std::string_view{};
    return Error{ErrorCode::Internal, "clblast: " + std::string(what) + ": " +
                                          (clName.empty() ? "status" : std::string(clName)) + " (" +
                                          std::to_string(code) + ")"};
}

} // namespace goblin::compute::opencl
