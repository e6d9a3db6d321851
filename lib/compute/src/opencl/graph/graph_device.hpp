// The OpenCL device a graph executor runs on: context, in-order queue, what the device can do, and
// the host ↔ device transfers of tensors. Owned by one OpenClGraphExecutor; its thread only.
#pragma once

#include "goblin/compute/opencl_devices.hpp"
#include "goblin/core/ops/op_catalog.hpp"
#include "goblin/core/tensor.hpp"
#include "opencl/cl_headers.hpp"

namespace goblin::compute::opencl {

// A tensor on the device. The buffer always holds at least one byte (OpenCL refuses empty
// buffers); `spec` says what it holds.
struct DeviceValue {
    core::ops::TensorSpec spec;
    cl::Buffer buffer;
    std::int64_t count = 0; // elements
};

struct GraphDevice {
    cl::Context context;
    cl::Device device;
    cl::CommandQueue queue;
    OpenClDeviceInfo info;
    // f32 division and sqrt correctly rounded (with -cl-fp32-correctly-rounded-divide-sqrt) and
    // denormals kept: needed for f32 kernels that must match the reference bit for bit.
    bool exactF32 = false;

    [[nodiscard]] static Expected<GraphDevice> open(int deviceIndex);

    [[nodiscard]] bool supports(core::DType dtype) const;
    [[nodiscard]] Expected<DeviceValue> allocate(const core::ops::TensorSpec& spec);
    [[nodiscard]] Expected<DeviceValue> upload(const core::Tensor& tensor);
    [[nodiscard]] Expected<core::Tensor> download(const DeviceValue& value);
    // A small read-only buffer of int64s (layouts, index tables).
    [[nodiscard]] Expected<cl::Buffer> constants(std::span<const std::int64_t> values);
};

} // namespace goblin::compute::opencl
