#include "opencl/graph/graph_device.hpp"

#include <algorithm>

#include "opencl/cl_error.hpp"
#include "opencl/device_lookup.hpp"

namespace goblin::compute::opencl {

Expected<GraphDevice> GraphDevice::open(int deviceIndex) {
    auto found = findOpenClDevice(deviceIndex);
    if (!found)
        return tl::unexpected(found.error());
    cl_int status = CL_SUCCESS;
    GraphDevice device;
    device.device = found->device;
    device.info = found->info;
    device.context = cl::Context(found->device, nullptr, nullptr, nullptr, &status);
    if (status != CL_SUCCESS)
        return tl::unexpected(clError(status, "clCreateContext"));
    device.queue = cl::CommandQueue(device.context, found->device, 0, &status);
    if (status != CL_SUCCESS)
        return tl::unexpected(clError(status, "clCreateCommandQueue"));
    const cl_device_fp_config single = found->device.getInfo<CL_DEVICE_SINGLE_FP_CONFIG>();
    device.exactF32 = (single & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) && (single & CL_FP_DENORM);
    return device;
}

bool GraphDevice::supports(core::DType dtype) const {
    if (dtype == core::DType::F64)
        return info.fp64;
    if (dtype == core::DType::F32)
        return exactF32;
    return true;
}

Expected<DeviceValue> GraphDevice::allocate(const core::ops::TensorSpec& spec) {
    auto bytes = core::byteSize(spec.dtype, spec.shape);
    if (!bytes)
        return tl::unexpected(bytes.error());
    cl_int status = CL_SUCCESS;
    cl::Buffer buffer(context, CL_MEM_READ_WRITE, std::max<std::size_t>(*bytes, 8), nullptr,
                      &status);
    if (status != CL_SUCCESS)
        return tl::unexpected(clError(status, "clCreateBuffer(graph value)"));
    return DeviceValue{spec, std::move(buffer),
                       static_cast<std::int64_t>(*bytes / core::itemSize(spec.dtype))};
}

Expected<DeviceValue> GraphDevice::upload(const core::Tensor& tensor) {
    auto value = allocate({tensor.dtype(), tensor.shape()});
    if (!value || tensor.byteSize() == 0)
        return value;
    const cl_int status = queue.enqueueWriteBuffer(value->buffer, CL_TRUE, 0, tensor.byteSize(),
                                                   tensor.bytes().data());
    if (status != CL_SUCCESS)
        return tl::unexpected(clError(status, "clEnqueueWriteBuffer(graph value)"));
    return value;
}

Expected<core::Tensor> GraphDevice::download(const DeviceValue& value) {
    auto tensor = core::Tensor::allocate(value.spec.dtype, value.spec.shape);
    if (!tensor || tensor->byteSize() == 0)
        return tensor;
    const cl_int status = queue.enqueueReadBuffer(value.buffer, CL_TRUE, 0, tensor->byteSize(),
                                                  tensor->bytes().data());
    if (status != CL_SUCCESS)
        return tl::unexpected(clError(status, "clEnqueueReadBuffer(graph value)"));
    return tensor;
}

Expected<cl::Buffer> GraphDevice::constants(std::span<const std::int64_t> values) {
    cl_int status = CL_SUCCESS;
    const std::int64_t none = 0;
    const void* data = values.empty() ? &none : values.data();
    cl::Buffer buffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                      std::max<std::size_t>(values.size_bytes(), sizeof none),
                      const_cast<void*>(data), &status);
    if (status != CL_SUCCESS)
        return tl::unexpected(clError(status, "clCreateBuffer(graph constants)"));
    return buffer;
}

} // namespace goblin::compute::opencl
