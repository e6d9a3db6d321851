// Launches of the layer_norm kernels (kernels/norm.cl): forward and input gradient one work-item
// per row; weight and bias gradients one per column after a per-row moments pass.
#include <string>

#include "opencl/graph/kernel_launch.hpp"

namespace goblin::compute::opencl {
namespace {

template <class T>
Expected<DeviceValue> layerNorm(LaunchContext& launch, core::ops::OpCode op, Args args,
                                const core::ops::Attributes& attrs,
                                const core::ops::TensorSpec& spec) {
    const std::int64_t ndim = core::ops::attrInt(attrs, "normalized_ndim", std::nullopt).value();
    const T eps =
        static_cast<T>(core::ops::attrOptionalNumber(attrs, "eps").value().value_or(1e-5));
    const DeviceValue& x = op == core::ops::OpCode::LayerNorm ? args[0] : args[1];
    std::int64_t k = 1;
    for (std::size_t d = x.spec.shape.size() - static_cast<std::size_t>(ndim);
         d < x.spec.shape.size(); ++d)
        k *= x.spec.shape[d];
    const std::int64_t rows = k == 0 ? 0 : x.count / k;
    const std::string defines = typeDefines(spec.dtype);
    auto out = launch.device.allocate(spec);
    if (!out)
        return out;
    auto kernelOf = [&](const char* name) {
        return launch.programs.kernel(KernelFamily::Norm, defines, name);
    };
    const std::string output =
        core::ops::attrString(attrs, "output", std::string("input")).value_or("input");
    Expected<void> done;
    if (op == core::ops::OpCode::LayerNorm || output == "input") {
        const bool forward = op == core::ops::OpCode::LayerNorm;
        auto kernel = kernelOf(forward ? "layer_norm_rows" : "layer_norm_input_grad");
        if (!kernel)
            return tl::unexpected(kernel.error());
        done = enqueueKernel(launch, *kernel, static_cast<std::size_t>(rows), args[0].buffer,
                             args[1].buffer, args[2].buffer, cl_long{k}, eps, out->buffer);
    } else {
        auto moments = launch.device.allocate({spec.dtype, {std::max<std::int64_t>(rows, 1), 2}});
        auto momentsKernel = kernelOf("layer_norm_moments");
        auto columnsKernel = kernelOf("layer_norm_param_grad");
        if (!moments || !momentsKernel || !columnsKernel)
            return tl::unexpected(!moments         ? moments.error()
                                  : !momentsKernel ? momentsKernel.error()
                                                   : columnsKernel.error());
        done = enqueueKernel(launch, *momentsKernel, static_cast<std::size_t>(rows), x.buffer,
                             cl_long{k}, eps, moments->buffer);
        if (done)
            done = enqueueKernel(launch, *columnsKernel, static_cast<std::size_t>(k),
                                 args[0].buffer, x.buffer, moments->buffer, cl_long{rows},
                                 cl_long{k}, cl_int{output == "bias" ? 1 : 0}, out->buffer);
    }
    if (!done)
        return tl::unexpected(done.error());
    return out;
}

} // namespace

Expected<DeviceValue> launchNormOp(LaunchContext& launch, core::ops::OpCode op, Args args,
                                   const core::ops::Attributes& attrs,
                                   const core::ops::TensorSpec& spec) {
    if (spec.dtype == core::DType::F64)
        return layerNorm<cl_double>(launch, op, args, attrs, spec);
    return layerNorm<cl_float>(launch, op, args, attrs, spec);
}

} // namespace goblin::compute::opencl
