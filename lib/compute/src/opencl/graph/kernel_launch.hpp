// What the node launchers share: the device, the program cache, the run's error flag, argument
// setting and enqueueing, and the broadcast layouts the kernels index through. One executor's
// thread only.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "opencl/cl_error.hpp"
#include "opencl/graph/graph_device.hpp"
#include "opencl/graph/program_cache.hpp"

namespace goblin::compute::opencl {

struct LaunchContext {
    GraphDevice& device;
    ProgramCache& programs;
    cl::Buffer errorFlag; // one cl_int, 0 until a kernel raises
};

// Sets the arguments in order and enqueues `globalSize` work-items (nothing for 0).
template <class... Args>
[[nodiscard]] Expected<void> enqueueKernel(LaunchContext& launch, cl::Kernel& kernel,
                                           std::size_t globalSize, const Args&... args) {
    cl_uint index = 0;
    cl_int status = CL_SUCCESS;
    ((status = status == CL_SUCCESS ? kernel.setArg(index++, args) : status), ...);
    if (status != CL_SUCCESS)
        return tl::unexpected(
            clError(status, "clSetKernelArg(" + kernel.getInfo<CL_KERNEL_FUNCTION_NAME>() + ")"));
    if (globalSize == 0)
        return {};
    status =
        launch.device.queue.enqueueNDRangeKernel(kernel, cl::NullRange, cl::NDRange(globalSize));
    if (status != CL_SUCCESS)
        return tl::unexpected(clError(status, "clEnqueueNDRangeKernel(" +
                                                  kernel.getInfo<CL_KERNEL_FUNCTION_NAME>() + ")"));
    return {};
}

// Zeroes the error flag / reads it (waits for the queue).
[[nodiscard]] Expected<void> clearErrorFlag(LaunchContext& launch);
[[nodiscard]] Expected<bool> errorRaised(LaunchContext& launch);

// The layout buffer of tensor_index.cl: `out`'s dims, then each input's strides seen through them
// (NumPy broadcasting: 0 where an input has size 1 or lacks the dim).
std::vector<std::int64_t> broadcastLayout(const core::Shape& out,
                                          std::span<const core::Shape> inputs);
// C-order strides of a shape, in elements.
std::vector<std::int64_t> stridesOf(const core::Shape& shape);

// A shape seen as [outer, size, inner] around one dim (a scalar is [1, 1, 1]).
struct DimSplit {
    std::int64_t outer = 1;
    std::int64_t size = 1;
    std::int64_t inner = 1;
};
DimSplit splitAt(const core::Shape& shape, std::size_t dim);

// -DE=uchar/uint/ulong: an unsigned type of the dtype's size, for kernels that only copy elements.
std::string copyTypeDefine(core::DType dtype);

using Args = std::span<const DeviceValue>;

// Family launchers; each returns the output value or an error (InvalidInput for runtime failures).
[[nodiscard]] Expected<DeviceValue> launchElementwise(LaunchContext& launch, core::ops::OpCode op,
                                                      Args args, const core::ops::Attributes& attrs,
                                                      const core::ops::TensorSpec& out);
[[nodiscard]] Expected<DeviceValue> launchReduction(LaunchContext& launch, core::ops::OpCode op,
                                                    Args args, const core::ops::Attributes& attrs,
                                                    const core::ops::TensorSpec& out);
// Catalog 3: indexing (gather, index_select, embedding, one_hot, index_add) and layout (concat,
// slice, pad, dropout_mask).
[[nodiscard]] Expected<DeviceValue> launchIndexOp(LaunchContext& launch, core::ops::OpCode op,
                                                  Args args, const core::ops::Attributes& attrs,
                                                  const core::ops::TensorSpec& out);
[[nodiscard]] Expected<DeviceValue> launchLayoutOp(LaunchContext& launch, core::ops::OpCode op,
                                                   Args args, const core::ops::Attributes& attrs,
                                                   const core::ops::TensorSpec& out);
// Catalog 3: conv2d and its gradients, the max_pool2d family; layer_norm and its backward.
[[nodiscard]] Expected<DeviceValue> launchWindowOp(LaunchContext& launch, core::ops::OpCode op,
                                                   Args args, const core::ops::Attributes& attrs,
                                                   const core::ops::TensorSpec& out);
[[nodiscard]] Expected<DeviceValue> launchNormOp(LaunchContext& launch, core::ops::OpCode op,
                                                 Args args, const core::ops::Attributes& attrs,
                                                 const core::ops::TensorSpec& out);
[[nodiscard]] Expected<DeviceValue> launchShapeOp(LaunchContext& launch, core::ops::OpCode op,
                                                  Args args, const core::ops::Attributes& attrs,
                                                  const core::ops::TensorSpec& out);

} // namespace goblin::compute::opencl
