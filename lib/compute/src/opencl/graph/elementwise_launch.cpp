// Launches of the elementwise kernels (kernels/elementwise.cl): unary, binary and where with
// broadcasting, clamp; the integer-division zero check runs first, as in the reference.
#include <string>

#include "opencl/graph/kernel_launch.hpp"

namespace goblin::compute::opencl {
namespace {

using core::DType;
using core::ops::OpCode;

bool isPredicate(OpCode op) {
    return op >= OpCode::Eq && op <= OpCode::LogicalXor;
}

// PyTorch raises on integer division by zero before computing anything; so do we.
Expected<void> refuseZeroDivisor(LaunchContext& launch, OpCode op, const std::string& defines,
                                 const DeviceValue& divisor) {
    auto kernel = launch.programs.kernel(KernelFamily::Elementwise, defines, "find_zero");
    if (!kernel)
        return tl::unexpected(kernel.error());
    if (auto done = enqueueKernel(launch, *kernel, static_cast<std::size_t>(divisor.count),
                                  divisor.buffer, launch.errorFlag);
        !done)
        return done;
    auto raised = errorRaised(launch);
    if (!raised)
        return tl::unexpected(raised.error());
    if (*raised)
        return makeError(ErrorCode::InvalidInput,
                         std::string(core::ops::opInfo(op).name) + ": integer division by zero");
    return {};
}

// clamp bounds converted to the tensor's type as the reference converts them (static_cast).
template <class T>
Expected<void> enqueueClamp(LaunchContext& launch, cl::Kernel& kernel, const DeviceValue& x,
                            DeviceValue& out, const core::ops::Attributes& attrs) {
    const auto low = core::ops::attrOptionalNumber(attrs, "min").value_or(std::nullopt);
    const auto high = core::ops::attrOptionalNumber(attrs, "max").value_or(std::nullopt);
    return enqueueKernel(launch, kernel, static_cast<std::size_t>(out.count), x.buffer, out.buffer,
                         cl_int{low ? 1 : 0}, low ? static_cast<T>(*low) : T{0},
                         cl_int{high ? 1 : 0}, high ? static_cast<T>(*high) : T{0});
}

Expected<void> enqueueClampOf(LaunchContext& launch, cl::Kernel& kernel, const DeviceValue& x,
                              DeviceValue& out, const core::ops::Attributes& attrs) {
    switch (x.spec.dtype) {
    case DType::F32:
        return enqueueClamp<cl_float>(launch, kernel, x, out, attrs);
    case DType::F64:
        return enqueueClamp<cl_double>(launch, kernel, x, out, attrs);
    case DType::I32:
        return enqueueClamp<cl_int>(launch, kernel, x, out, attrs);
    case DType::I64:
        return enqueueClamp<cl_long>(launch, kernel, x, out, attrs);
    case DType::Bool:
        break;
    }
    return enqueueClamp<cl_uchar>(launch, kernel, x, out, attrs);
}

const char* kernelName(OpCode op, std::size_t arity) {
    if (op == OpCode::Where)
        return "where_select";
    if (op == OpCode::Clamp)
        return "clamp_values";
    if (arity == 1)
        return op == OpCode::LogicalNot || op == OpCode::IsNan ? "unary_to_bool" : "unary";
    return isPredicate(op) ? "binary_to_bool" : "binary";
}

} // namespace

Expected<DeviceValue> launchElementwise(LaunchContext& launch, OpCode op, Args args,
                                        const core::ops::Attributes& attrs,
                                        const core::ops::TensorSpec& spec) {
    const DType dtype = args[op == OpCode::Where ? 1 : 0].spec.dtype;
    const std::string defines = typeDefines(dtype);
    if ((op == OpCode::FloorDivide || op == OpCode::Remainder) && !core::isFloatingPoint(dtype))
        if (auto refused = refuseZeroDivisor(launch, op, defines, args[1]); !refused)
            return tl::unexpected(refused.error());
    auto out = launch.device.allocate(spec);
    if (!out)
        return out;
    auto kernel =
        launch.programs.kernel(KernelFamily::Elementwise, defines, kernelName(op, args.size()));
    if (!kernel)
        return tl::unexpected(kernel.error());
    const auto n = static_cast<std::size_t>(out->count);
    const cl_int code = static_cast<cl_int>(op);
    Expected<void> done;
    if (op == OpCode::Clamp) {
        done = enqueueClampOf(launch, *kernel, args[0], *out, attrs);
    } else if (args.size() == 1) {
        const bool tanhGelu =
            core::ops::attrString(attrs, "approximate", std::string("none")).value_or("") == "tanh";
        done = std::string(kernelName(op, 1)) == "unary"
                   ? enqueueKernel(launch, *kernel, n, args[0].buffer, out->buffer, code,
                                   cl_int{tanhGelu ? 1 : 0})
                   : enqueueKernel(launch, *kernel, n, args[0].buffer, out->buffer, code);
    } else {
        std::vector<core::Shape> shapes;
        for (const DeviceValue& arg : args)
            shapes.push_back(arg.spec.shape);
        auto layout = launch.device.constants(broadcastLayout(spec.shape, shapes));
        if (!layout)
            return tl::unexpected(layout.error());
        done = op == OpCode::Where
                   ? enqueueKernel(launch, *kernel, n, args[0].buffer, args[1].buffer,
                                   args[2].buffer, out->buffer, *layout)
                   : enqueueKernel(launch, *kernel, n, args[0].buffer, args[1].buffer, out->buffer,
                                   *layout, code);
    }
    if (!done)
        return tl::unexpected(done.error());
    return out;
}

} // namespace goblin::compute::opencl
