#include "finite_scan.hpp"

#include <algorithm>
#include <string>

#include "cl_error.hpp"
#include "goblin_kernels/finite_scan_cl.hpp"

namespace goblin::compute::opencl {
namespace {

// The reduction in the kernel halves the group: the size must be a power of two.
std::size_t powerOfTwoAtMost(std::size_t limit) {
    std::size_t size = 1;
    while (size * 2 <= limit)
        size *= 2;
    return size;
}

} // namespace

Expected<FiniteScan> FiniteScan::build(const cl::Context& context, const cl::Device& device,
                                       core::DType dtype) {
    const bool f64 = dtype == core::DType::F64;
    const std::string options = f64 ? "-DREAL=double -DGOBLIN_FP64" : "-DREAL=float";
    cl_int status = CL_SUCCESS;
    cl::Program program(context, std::string(kernels::kFiniteScanSource), false, &status);
    if (status != CL_SUCCESS)
        return tl::unexpected(clError(status, "clCreateProgramWithSource(finite_scan)"));
    status = program.build(std::vector<cl::Device>{device}, options.c_str());
    if (status != CL_SUCCESS) {
        Error error = clError(status, "building finite_scan.cl");
        const std::string log = program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(device);
        error.message += ": " + log.substr(0, 400);
        return tl::unexpected(std::move(error));
    }
    cl::Kernel kernel(program, "count_nonfinite", &status);
    if (status != CL_SUCCESS)
        return tl::unexpected(clError(status, "clCreateKernel(count_nonfinite)"));
    const std::size_t kernelLimit =
        kernel.getWorkGroupInfo<CL_KERNEL_WORK_GROUP_SIZE>(device, &status);
    const std::size_t groupSize =
        powerOfTwoAtMost(std::clamp<std::size_t>(status == CL_SUCCESS ? kernelLimit : 1, 1, 256));
    const std::size_t units = std::max<cl_uint>(1, device.getInfo<CL_DEVICE_MAX_COMPUTE_UNITS>());
    return FiniteScan(context, std::move(kernel), groupSize, units * 8);
}

Expected<std::uint64_t> FiniteScan::countNonFinite(cl::CommandQueue& queue,
                                                   const cl::Buffer& values, std::uint64_t count) {
    if (count == 0)
        return std::uint64_t{0};
    cl_int status = CL_SUCCESS;
    const cl_uint zero = 0;
    cl::Buffer counter(m_context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(cl_uint),
                       const_cast<cl_uint*>(&zero), &status);
    if (status != CL_SUCCESS)
        return tl::unexpected(clError(status, "clCreateBuffer(finite_scan counter)"));
    const std::size_t groups = std::clamp<std::size_t>(
        static_cast<std::size_t>((count + m_groupSize - 1) / m_groupSize), 1, m_maxGroups);
    const cl_ulong n = count;
    for (cl_int set :
         {m_kernel.setArg(0, values), m_kernel.setArg(1, n), m_kernel.setArg(2, counter),
          m_kernel.setArg(3, cl::Local(m_groupSize * sizeof(cl_uint)))}) {
        if (set != CL_SUCCESS)
            return tl::unexpected(clError(set, "clSetKernelArg(count_nonfinite)"));
    }
    status = queue.enqueueNDRangeKernel(m_kernel, cl::NullRange, cl::NDRange(groups * m_groupSize),
                                        cl::NDRange(m_groupSize));
    if (status != CL_SUCCESS)
        return tl::unexpected(clError(status, "clEnqueueNDRangeKernel(count_nonfinite)"));
    cl_uint result = 0;
    status = queue.enqueueReadBuffer(counter, CL_TRUE, 0, sizeof result, &result);
    if (status != CL_SUCCESS)
        return tl::unexpected(clError(status, "clEnqueueReadBuffer(finite_scan counter)"));
    return std::uint64_t{result};
}

} // namespace goblin::compute::opencl
