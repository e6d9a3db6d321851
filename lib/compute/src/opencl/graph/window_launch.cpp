// Launches of the window kernels (kernels/window.cl): conv2d and its gradients, max_pool2d values,
// indices and gradient. The geometry travels as one small int64 table.
#include "goblin/core/ops/op_geometry.hpp"
#include "opencl/graph/kernel_launch.hpp"

namespace goblin::compute::opencl {
namespace {

using core::ops::OpCode;

// n c h w o ci kh kw oh ow groups stride pad dilation (as window.cl's enum).
std::vector<std::int64_t> convGeometry(const core::Shape& input, const core::Shape& weight,
                                       const core::Shape& output,
                                       const core::ops::Conv2dParams& p) {
    return {input[0],    input[1],     input[2],     input[3],      weight[0],    weight[1],
            weight[2],   weight[3],    output[2],    output[3],     p.groups,     p.stride[0],
            p.stride[1], p.padding[0], p.padding[1], p.dilation[0], p.dilation[1]};
}

// planes h w oh ow kernel stride pad dilation (as window.cl's enum).
std::vector<std::int64_t> poolGeometry(const core::Shape& input, const core::Shape& output,
                                       const core::ops::Pool2dParams& p) {
    const std::size_t rank = input.size();
    std::int64_t planes = 1;
    for (std::size_t d = 0; d + 2 < rank; ++d)
        planes *= input[d];
    return {planes,       input[rank - 2], input[rank - 1], output[rank - 2], output[rank - 1],
            p.kernel[0],  p.kernel[1],     p.stride[0],     p.stride[1],      p.padding[0],
            p.padding[1], p.dilation[0],   p.dilation[1]};
}

template <class... Rest>
Expected<DeviceValue> runWindowKernel(LaunchContext& launch, const char* name, core::DType dtype,
                                      const core::ops::TensorSpec& spec,
                                      const std::vector<std::int64_t>& geometry,
                                      const Rest&... inputs) {
    auto table = launch.device.constants(geometry);
    if (!table)
        return tl::unexpected(table.error());
    auto out = launch.device.allocate(spec);
    if (!out)
        return out;
    auto kernel = launch.programs.kernel(KernelFamily::Window, typeDefines(dtype), name);
    if (!kernel)
        return tl::unexpected(kernel.error());
    if (auto done = enqueueKernel(launch, *kernel, static_cast<std::size_t>(out->count), inputs...,
                                  *table, out->buffer);
        !done)
        return tl::unexpected(done.error());
    return out;
}

Expected<DeviceValue> convolution(LaunchContext& launch, OpCode op, Args args,
                                  const core::ops::Attributes& attrs,
                                  const core::ops::TensorSpec& spec) {
    auto params = core::ops::conv2dParams(attrs);
    if (!params)
        return tl::unexpected(params.error());
    const core::Shape& a = args[0].spec.shape;
    const core::Shape& b = args[1].spec.shape;
    switch (op) {
    case OpCode::Conv2d:
        return runWindowKernel(launch, "conv2d_forward", spec.dtype, spec,
                               convGeometry(a, b, spec.shape, *params), args[0].buffer,
                               args[1].buffer);
    case OpCode::Conv2dInputGrad:
        return runWindowKernel(launch, "conv2d_input_grad", spec.dtype, spec,
                               convGeometry(spec.shape, b, a, *params), args[0].buffer,
                               args[1].buffer);
    default:
        return runWindowKernel(launch, "conv2d_weight_grad", spec.dtype, spec,
                               convGeometry(a, spec.shape, b, *params), args[0].buffer,
                               args[1].buffer);
    }
}

Expected<DeviceValue> pooling(LaunchContext& launch, OpCode op, Args args,
                              const core::ops::Attributes& attrs,
                              const core::ops::TensorSpec& spec) {
    auto params = core::ops::pool2dParams(attrs);
    if (!params)
        return tl::unexpected(params.error());
    const DeviceValue& x = args.back();
    if (op == OpCode::MaxPool2d)
        return runWindowKernel(launch, "max_pool_values", x.spec.dtype, spec,
                               poolGeometry(x.spec.shape, spec.shape, *params), x.buffer);
    if (op == OpCode::MaxPool2dIndices)
        return runWindowKernel(launch, "max_pool_indices", x.spec.dtype, spec,
                               poolGeometry(x.spec.shape, spec.shape, *params), x.buffer);
    // Backward: the argmax of every window first, then each input element gathers its gradients.
    const auto geometry = poolGeometry(x.spec.shape, args[0].spec.shape, *params);
    auto argmax = runWindowKernel(launch, "max_pool_indices", x.spec.dtype,
                                  core::ops::TensorSpec{core::DType::I64, args[0].spec.shape},
                                  geometry, x.buffer);
    if (!argmax)
        return argmax;
    return runWindowKernel(launch, "max_pool_backward", x.spec.dtype, spec, geometry,
                           args[0].buffer, argmax->buffer);
}

} // namespace

Expected<DeviceValue> launchWindowOp(LaunchContext& launch, OpCode op, Args args,
                                     const core::ops::Attributes& attrs,
                                     const core::ops::TensorSpec& spec) {
    if (op >= OpCode::Conv2d && op <= OpCode::Conv2dWeightGrad)
        return convolution(launch, op, args, attrs, spec);
    return pooling(launch, op, args, attrs, spec);
}

} // namespace goblin::compute::opencl
